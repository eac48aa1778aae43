package serve

import (
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// The kept tail of Flow's stderr (issue 11 item 4; round2-decisions 4):
// <state>/runs/<run_id>.stderr, 0600, at most flowrun.StderrKeepBytes (the
// tail of the stream), written temp-then-rename. It is for the local
// operator (`openadapt-agent runs show RUN_ID --protected`): no MCP
// projection, audit line or log line ever reads it. Protected export keeps
// serving the in-memory 4000-character tails of §6.4, not this file.

// stderrTailPath is the tail file of runID, which matches its pattern.
func (d stateDir) stderrTailPath(runID string) string {
	return filepath.Join(d.dir, "runs", runID+".stderr")
}

// writeStderrTail replaces runID's tail file with data. The state folder
// is serve's own (prepared 0700, not a link); a link at the file itself is
// replaced, never followed.
func (d stateDir) writeStderrTail(runID string, data []byte) error {
	return fsutil.WriteFile(d.stderrTailPath(runID), data, 0o600)
}
