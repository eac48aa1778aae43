package serve

import (
	"fmt"
	"io"
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// recordAuthorityDB writes <state>/authority.json (docs/helper.md): the
// durable-authority database that childEnv, the environment this server
// gives every Flow child and its helper, selects (they run in the server's
// working directory). `openadapt-agent attention` reads it and gives its
// own helper the same database, since only the journal holding a run's
// pause binding accepts decisions on it. A stateful server only; a failure
// is a warning.
func recordAuthorityDB(st *runstore.State, childEnv []string, stderr io.Writer) {
	wd, _ := os.Getwd()
	p := flowhelper.AuthorityDB(childEnv, wd)
	if p == "" {
		return
	}
	if err := flowhelper.WriteAuthorityRecord(st.Dir(), p); err != nil {
		fmt.Fprintln(stderr, "serve: warning: the durable-authority database path could not be recorded in the state folder")
	}
}
