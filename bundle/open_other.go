//go:build !unix

package bundle

import (
	"io/fs"
	"os"
)

// openNoFollow opens path for reading unless it is a symlink (errIsSymlink)
// or not a regular file; the opened file must be the one that was lstat'ed.
func openNoFollow(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errIsSymlink
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, errIsSymlink // replaced between lstat and open
	}
	return f, nil
}
