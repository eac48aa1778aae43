package fsutil

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
)

// DirFS is os.DirFS(dir) with this package's input rules: Open refuses a
// FIFO, socket or device without blocking ([ErrNotRegular]) and a file
// above lim ([*TooLargeError]); ReadFile reads at most lim.Max bytes.
// Folders open as usual. Links are followed, as with os.DirFS: use it for a
// folder the user named (an evidence root), never to write.
func DirFS(dir string, lim Limit) fs.FS { return dirFS{dir: dir, lim: lim} }

type dirFS struct {
	dir string
	lim Limit
}

func (d dirFS) join(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(d.dir, filepath.FromSlash(name)), nil
}

func (d dirFS) Open(name string) (fs.File, error) {
	p, err := d.join("open", name)
	if err != nil {
		return nil, err
	}
	f, err := openRead(p, false)
	if err != nil {
		return nil, rename(err, name)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, rename(err, name)
	}
	switch {
	case fi.IsDir():
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ErrNotRegular}
	case fi.Size() > d.lim.Max:
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: &TooLargeError{Limit: d.lim, Size: fi.Size()}}
	}
	return f, nil
}

func (d dirFS) ReadFile(name string) ([]byte, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	b, err := ReadAll(context.Background(), f, fi.Size(), d.lim)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return b, nil
}

func (d dirFS) Stat(name string) (fs.FileInfo, error) {
	p, err := d.join("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	return fi, rename(err, name)
}

// rename makes a PathError name the fs path, not the OS path.
func rename(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}
