package serve

import (
	"fmt"
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// recordAuthorityDB writes <state>/authority.json (flow-helper.md §12.24):
// the durable-authority database that the environment this server gives
// every Flow child and its helper selects (they run in the server's working
// directory). `openadapt-agent attention` reads it and gives its own helper
// the same database, since only the journal holding a run's pause binding
// accepts decisions on it. A stateful server only; a failure is a warning.
func (s *Server) recordAuthorityDB() {
	wd, _ := os.Getwd()
	p := flowhelper.AuthorityDB(s.childEnv, wd)
	if p == "" {
		return
	}
	if err := flowhelper.WriteAuthorityRecord(s.state.Dir(), p); err != nil {
		fmt.Fprintln(s.stderr, "serve: warning: the durable-authority database path could not be recorded in the state folder")
	}
}
