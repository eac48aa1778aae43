package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// WriteFile writes data to rel beneath the root all-or-nothing: a temporary
// sibling (created exclusively, never through a link) is written, given
// perm, synced and renamed over rel. A link at rel is replaced, never
// followed. Missing parent folders are made (0755). On error nothing is
// left behind and rel is as it was.
func (r *Root) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	return r.WriteFileFunc(rel, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFileFunc is [Root.WriteFile] with the content written by fill into
// the temporary file (streamed: an archive being packed).
func (r *Root) WriteFileFunc(rel string, perm fs.FileMode, fill func(*os.File) error) (err error) {
	tmp, rel, err := r.writeTemp(rel, perm, fill)
	if err != nil {
		return err
	}
	defer r.untrack(tmp)
	if err = r.Rename(tmp, rel); err != nil {
		r.Remove(tmp)
		return fmt.Errorf("renaming into place %s: %w", path.Base(rel), err)
	}
	return nil
}

// CreateFile publishes data at rel (perm) only if nothing is there yet: it
// is written and fsynced to a temporary file beside rel, then renamed into
// place without replacing (Linux) or hard-linked there (elsewhere, where
// the file has a second link until the temporary is removed), so a reader
// never sees part of it and of two concurrent creators exactly one wins. When rel exists the error wraps [fs.ErrExist].
// The temporary is removed in every case (and, while it exists, is pending
// for [RemovePending]).
func (r *Root) CreateFile(rel string, data []byte, perm fs.FileMode) error {
	tmp, rel, err := r.writeTemp(rel, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	defer r.untrack(tmp)
	defer r.Remove(tmp)
	return r.publish(tmp, rel)
}

// writeTemp writes a new temporary file beside rel (its folder made if
// missing) with perm and the content of fill, fsynced and closed. The
// temporary is pending until the caller untracks it; on error it is
// already removed.
func (r *Root) writeTemp(rel string, perm fs.FileMode, fill func(*os.File) error) (string, string, error) {
	rel, err := clean(rel)
	if err != nil {
		return "", "", err
	}
	dir, base := split(rel)
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	tmp := joinRel(dir, "."+base+".tmp-"+randomSuffix())
	if err := creating(); err != nil {
		return "", "", err
	}
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", "", fmt.Errorf("creating temporary file for %s: %w", base, err)
	}
	r.track(tmp)
	fail := func(err error) (string, string, error) {
		f.Close()
		r.Remove(tmp)
		r.untrack(tmp)
		return "", "", err
	}
	if err := f.Chmod(perm); err != nil {
		return fail(fmt.Errorf("setting mode of %s: %w", base, err))
	}
	if err := fill(f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("syncing %s: %w", base, err))
	}
	if err := f.Close(); err != nil {
		r.Remove(tmp)
		r.untrack(tmp)
		return "", "", fmt.Errorf("closing %s: %w", base, err)
	}
	return tmp, rel, nil
}

func joinRel(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// WriteFile writes data to path atomically with perm: path's folder is the
// root (it must exist), so a link at path itself is replaced, never
// followed (the one atomic file write of this project).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteFileFunc(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// WriteFileFunc is [WriteFile] with the content streamed by fill.
func WriteFileFunc(path string, perm fs.FileMode, fill func(*os.File) error) error {
	return inParent(path, func(r *Root, base string) error { return r.WriteFileFunc(base, perm, fill) })
}

// inParent runs op on a root of path's folder (which must exist) with
// path's final name.
func inParent(path string, op func(r *Root, base string) error) error {
	dir, base := filepath.Split(filepath.Clean(path))
	if dir == "" {
		dir = "."
	}
	r, err := OpenRoot(dir, "")
	if err != nil {
		return err
	}
	defer r.Close()
	return op(r, base)
}

// CreateFile is [Root.CreateFile] at a path whose folder is the root (it
// must exist).
func CreateFile(p string, data []byte, perm fs.FileMode) error {
	return inParent(p, func(r *Root, base string) error { return r.CreateFile(base, data, perm) })
}

// ErrExists is returned by [Stage.Commit] when the final entry exists and
// replacing it was not requested.
var ErrExists = errors.New("destination already exists")

// Stage is a private temporary folder beneath a [Root] that becomes a final
// folder on [Stage.Commit]. Fill it through the root at [Stage.Rel] (or, on
// a private 0700 folder only this user can change, at [Stage.Path]). Call
// [Stage.Abort] (safe to defer; a no-op after Commit) to remove it on
// failure or cancellation.
type Stage struct {
	// Rel is the staging folder relative to the root.
	Rel string

	root  *Root
	final string
	done  bool
}

// Path is the staging folder's OS path.
func (s *Stage) Path() string { return s.root.Join(s.Rel) }

// StageDir makes a staging folder for the final folder rel: a 0700 sibling
// named ".<base>.stage-<random>" (parents made, never through a link).
func (r *Root) StageDir(rel string) (*Stage, error) {
	rel, err := clean(rel)
	if err != nil {
		return nil, err
	}
	dir, base := split(rel)
	tmp, err := r.MkdirTemp(dir, "."+base+".stage-")
	if err != nil {
		return nil, fmt.Errorf("creating staging folder for %s: %w", base, err)
	}
	return &Stage{Rel: tmp, root: r, final: rel}, nil
}

// Commit moves the staged folder to its final path, with perm applied to
// it. When replace is false and the final entry exists, it returns an error
// wrapping [ErrExists] and leaves both untouched. When replace is true, the
// existing final entry (a folder, file or link — a link is replaced, never
// followed) is moved aside first and removed only after the new folder is
// in place; if that rename fails it is put back.
func (s *Stage) Commit(replace bool, perm fs.FileMode) error {
	if s.done {
		return errors.New("staging folder already committed or aborted")
	}
	r := s.root
	if err := r.Chmod(s.Rel, perm); err != nil {
		return err
	}
	_, base := split(s.final)
	if _, err := r.Lstat(s.final); err == nil {
		if !replace {
			return fmt.Errorf("%s: %w", base, ErrExists)
		}
		old := s.Rel + ".old"
		if err := r.Rename(s.final, old); err != nil {
			return fmt.Errorf("moving aside %s: %w", base, err)
		}
		if err := r.Rename(s.Rel, s.final); err != nil {
			r.Rename(old, s.final)
			return fmt.Errorf("renaming into place %s: %w", base, err)
		}
		s.done = true
		return r.RemoveAll(old)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", base, err)
	}
	if err := r.Rename(s.Rel, s.final); err != nil {
		return fmt.Errorf("renaming into place %s: %w", base, err)
	}
	s.done = true
	return nil
}

// Abort removes the staging folder unless it was committed.
func (s *Stage) Abort() {
	if s.done {
		return
	}
	s.done = true
	s.root.RemoveAll(s.Rel)
}
