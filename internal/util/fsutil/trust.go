package fsutil

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotOurs is wrapped by every [*NotOursError].
var ErrNotOurs = errors.New("not this user's own file")

// NotOursError is a file (or folder) [CheckOurs] refuses: Path names it,
// Reason says why and Fix how to make it usable. It never carries the
// file's content.
type NotOursError struct {
	Path   string
	Reason string // "is owned by another user", "has more than one hard link", "is writable by other users"
	Fix    string
	// Linked is true when the one reason is a second hard link: a file of
	// ours that [Root.CreateFile] is still publishing by a link looks so
	// for a moment, so a reader of such files may look again.
	Linked bool
}

func (e *NotOursError) Error() string {
	return "refusing to use " + e.Path + ": it " + e.Reason + "; fix: " + e.Fix
}

// Unwrap makes errors.Is(err, ErrNotOurs) true.
func (e *NotOursError) Unwrap() error { return ErrNotOurs }

// CheckOurs returns a [*NotOursError] when fi, the file or folder at path,
// is not this user's own: owned by another user, a file with more than one
// hard link, or anything with a group or other write bit. fi should come
// from the opened descriptor (f.Stat), so that what is checked is what is
// used.
func CheckOurs(path string, fi fs.FileInfo) error { return checkOurs(path, fi) }

// name is how errors about rel name it: the root's label joined with rel,
// or its OS path when the root has no label.
func (r *Root) name(rel string) string {
	if r.label == "" {
		return r.Join(rel)
	}
	return r.display(rel)
}

// OpenOurs opens rel beneath the root like [Root.OpenFile] (never through a
// link, regular files only) for a write in place or an append, and refuses
// a file that is not this user's own ([CheckOurs], on the opened
// descriptor). A file the call creates passes (it is ours, with perm).
func (r *Root) OpenOurs(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := r.OpenFile(rel, flag, perm)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(r.name(rel), f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenOurs is [Root.OpenOurs] at path, whose folder is the root (it must
// exist; the path to it may go through links: the caller chose it).
func OpenOurs(path string, flag int, perm fs.FileMode) (*os.File, error) {
	var f *os.File
	err := inParent(path, func(r *Root, base string) error {
		var err error
		f, err = r.OpenFile(base, flag, perm)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := checkOpened(filepath.Clean(path), f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkOpened(name string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return checkOurs(name, fi)
}

// ReadOurs is [ReadFile] with [NoFollow] for a file this project wrote
// and trusts: the opened file must also pass [CheckOurs].
func ReadOurs(ctx context.Context, path string, lim Limit) ([]byte, error) {
	f, fi, err := Open(path, lim, NoFollow)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := checkOurs(path, fi); err != nil {
		return nil, err
	}
	data, err := readSized(ctx, f, fi.Size(), lim)
	if err != nil {
		var tl *TooLargeError
		if errors.As(err, &tl) {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return nil, err
	}
	return data, nil
}
