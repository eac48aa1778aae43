package serve

import (
	"errors"
	"io/fs"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// checkReadOnlyRunsDir is startup rule 10 for a read-only server, which
// creates and changes no state (round2-decisions 2) but still reads the
// runs folder (get_run_report, list_needs_attention): an existing runs or
// state folder that is a symbolic link, writable by other users or owned by
// another user is refused, never tightened (round2-decisions 23: read-only
// commands refuse an unsafe state dir instead of changing it). A missing
// folder is fine: it simply has no runs yet.
func checkReadOnlyRunsDir(dir string) error {
	err := runstore.CheckRunsDir(dir)
	var ue *runstore.UnsafeDirError
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.As(err, &ue):
		return configErrorf("refusing to read the runs or state directory %s: it %s; a read-only server does not change it: make it private (chmod 700) or pass another --runs-dir", ue.Path, ue.Reason)
	}
	return configErrorf("the runs directory could not be read: %s; pass an absolute --runs-dir", dir)
}
