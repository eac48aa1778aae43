//go:build !unix

package fsutil

import (
	"io/fs"
	"os"
)

// openRead: without O_NOFOLLOW/O_NONBLOCK, lstat (or stat) first, refuse a
// symlink or a non-regular file before opening, and check the opened file
// is the one examined.
func openRead(path string, noFollow bool) (*os.File, error) {
	stat := os.Stat
	if noFollow {
		stat = os.Lstat
	}
	fi, err := stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrSymlink}
	}
	return f, nil
}

// openDir opens a folder for listing, refusing anything else.
func openDir(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	return os.Open(path)
}
