package cmd

import (
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
)

// runsDirOrDefault is a command's runs folder, made absolute: --runs-dir
// when given, else the one default every command shares with serve, the
// per-user state folder's runs (internal/util/userdirs; docs/runs.md), so
// no command depends on the folder it was started in.
func runsDirOrDefault(flag string) (string, error) {
	dir := flag
	if dir == "" {
		d, err := userdirs.RunsDir()
		if err != nil {
			return "", usageErrorf("the runs directory could not be determined (%v); pass --runs-dir", err)
		}
		dir = d
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", usageError(err)
	}
	return abs, nil
}
