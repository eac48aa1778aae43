// Package atomicfile is kept for its callers while they move to
// internal/fsutil, which absorbed it: [WriteFile] forwards to
// fsutil.WriteFile (temporary sibling, sync, rename; a link at path is
// replaced, never followed). New code should call fsutil directly.
package atomicfile

import (
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/fsutil"
)

// WriteFile writes data to path atomically with permission perm; see
// fsutil.WriteFile.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return fsutil.WriteFile(path, data, perm)
}
