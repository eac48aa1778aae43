//go:build !unix

package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// On systems without openat (Windows), every component is lstat'ed before
// each operation: a link is refused, never followed. This narrows but
// cannot close the race with a concurrent swap; Unix builds have no race.

type sysRoot struct{}

func openSysRoot(dir string) (sysRoot, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return sysRoot{}, err
	}
	if !fi.IsDir() {
		return sysRoot{}, &fs.PathError{Op: "open", Path: dir, Err: ErrNotDir}
	}
	return sysRoot{}, nil
}

func (sysRoot) close() error { return nil }

// check lstat's every component of rel (all of it when full, else the
// parent's); missing folders are made when create.
func (r *Root) check(rel string, full, create bool, op string) error {
	parts := strings.Split(rel, "/")
	if !full {
		parts = parts[:len(parts)-1]
	}
	for i := range parts {
		here := strings.Join(parts[:i+1], "/")
		fi, err := os.Lstat(r.Join(here))
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = os.Mkdir(r.Join(here), 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(r.Join(here))
			}
		}
		if err != nil {
			return &fs.PathError{Op: op, Path: r.display(here), Err: err}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return &LinkError{Op: op, Path: r.display(here)}
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: op, Path: r.display(here), Err: ErrNotDir}
		}
	}
	return nil
}

func (r *Root) parentCheck(rel, op string) (string, error) {
	rel, err := clean(rel)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", errors.New("the root itself cannot be the target")
	}
	return rel, r.check(rel, false, false, op)
}

func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	rel, err := clean(rel)
	if err != nil || rel == "." {
		return err
	}
	return r.check(rel, true, true, "write")
}

func (r *Root) Mkdir(rel string, perm fs.FileMode) error {
	rel, err := r.parentCheck(rel, "write")
	if err != nil {
		return err
	}
	return os.Mkdir(r.Join(rel), perm)
}

func (r *Root) MkdirTemp(dir, prefix string) (string, error) {
	dir, err := clean(dir)
	if err != nil {
		return "", err
	}
	if err := creating(); err != nil {
		return "", err
	}
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p, err := os.MkdirTemp(r.Join(dir), prefix)
	if err != nil {
		return "", err
	}
	rel := joinRel(dir, p[len(r.Join(dir))+1:])
	r.track(rel)
	return rel, nil
}

func (r *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	rel, err := r.parentCheck(rel, "open")
	if err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(r.Join(rel)); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &LinkError{Op: "open", Path: r.display(rel)}
		}
		if !fi.Mode().IsRegular() && !fi.IsDir() {
			return nil, &fs.PathError{Op: "open", Path: r.display(rel), Err: ErrNotRegular}
		}
	}
	return os.OpenFile(r.Join(rel), flag, perm)
}

func (r *Root) Lstat(rel string) (fs.FileInfo, error) { return r.lstat(rel, "open") }

func (r *Root) lstat(rel, op string) (fs.FileInfo, error) {
	rel, err := clean(rel)
	if err != nil {
		return nil, err
	}
	if rel != "." {
		if err := r.check(rel, false, false, op); err != nil {
			return nil, err
		}
	}
	return os.Lstat(r.Join(rel))
}

func (r *Root) Readlink(rel string) (string, error) {
	rel, err := r.parentCheck(rel, "open")
	if err != nil {
		return "", err
	}
	return os.Readlink(r.Join(rel))
}

func (r *Root) Symlink(target, rel string) error {
	rel, err := r.parentCheck(rel, "write")
	if err != nil {
		return err
	}
	return os.Symlink(target, r.Join(rel))
}

func (r *Root) Rename(oldRel, newRel string) error {
	defer r.untrack(oldRel)
	o, err := r.parentCheck(oldRel, "rename")
	if err != nil {
		return err
	}
	n, err := r.parentCheck(newRel, "rename")
	if err != nil {
		return err
	}
	return os.Rename(r.Join(o), r.Join(n))
}

// publish links oldRel to newRel (which must not exist); the caller
// removes oldRel.
func (r *Root) publish(oldRel, newRel string) error { return r.Link(oldRel, newRel) }

// Link makes newRel a new hard link to the file oldRel.
func (r *Root) Link(oldRel, newRel string) error {
	o, err := r.parentCheck(oldRel, "link")
	if err != nil {
		return err
	}
	n, err := r.parentCheck(newRel, "link")
	if err != nil {
		return err
	}
	return os.Link(r.Join(o), r.Join(n))
}

func (r *Root) Remove(rel string) error {
	rel, err := r.parentCheck(rel, "delete")
	if err != nil {
		return err
	}
	return os.Remove(r.Join(rel))
}

func (r *Root) RemoveAll(rel string) error {
	defer r.untrack(rel)
	rel, err := r.parentCheck(rel, "delete")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.RemoveAll(r.Join(rel)) // os.RemoveAll removes a link, never its target
}

func (r *Root) Chmod(rel string, perm fs.FileMode) error {
	rel, err := r.parentCheck(rel, "write")
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(r.Join(rel)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &LinkError{Op: "write", Path: r.display(rel)}
	}
	return os.Chmod(r.Join(rel), perm)
}
