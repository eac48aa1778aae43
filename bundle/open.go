package bundle

import (
	"errors"
	"io/fs"
	"math"
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// anyAsset bounds nothing by size (callers cap what they read); the shared
// open still refuses links and anything that is not a regular file.
var anyAsset = fsutil.Limit{Kind: "bundle file", Max: math.MaxInt64}

// openNoFollow opens path for reading through the project's one bounded
// open (internal/util/fsutil): a final symlink is errIsSymlink, a FIFO, socket,
// device or folder is errNotRegular (refused without blocking: the open is
// non-blocking and the type is checked on the opened descriptor). fi is the
// opened file's, so callers need no second fstat.
func openNoFollow(path string) (*os.File, fs.FileInfo, error) {
	f, fi, err := fsutil.Open(path, anyAsset, fsutil.NoFollow)
	switch {
	case errors.Is(err, fsutil.ErrSymlink):
		return nil, nil, errIsSymlink
	case errors.Is(err, fsutil.ErrNotRegular):
		return nil, nil, errNotRegular
	}
	return f, fi, err
}
