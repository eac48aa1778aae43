// Package atomicfile writes files and folders all-or-nothing: the content is
// written to a temporary sibling, synced, then renamed into place, so a reader
// sees either the old state or the complete new one, never half a write.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with permission perm. The
// temporary file lives in the same folder, so the final rename never crosses
// file systems. On any error the temporary file is removed and path is left
// as it was.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", base, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("setting mode of %s: %w", base, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", base, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", base, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", base, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming into place %s: %w", base, err)
	}
	return nil
}

// ErrExists is returned by [Stage.Commit] when the final folder already
// exists and replacing it was not requested.
var ErrExists = errors.New("destination already exists")

// Stage is a temporary folder that becomes the final folder on [Stage.Commit].
// Write everything into [Stage.Dir] first. Call [Stage.Abort] (safe to defer,
// and a no-op after a successful commit) to remove everything on failure.
type Stage struct {
	// Dir is the temporary folder to fill. It is a sibling of the final
	// folder, so the commit rename never crosses file systems.
	Dir string

	final string
	done  bool
}

// StageDir creates a staging folder for the folder final. The parent of final
// must exist.
func StageDir(final string) (*Stage, error) {
	final = filepath.Clean(final)
	parent, base := filepath.Split(final)
	if parent == "" {
		parent = "."
	}
	dir, err := os.MkdirTemp(parent, "."+base+".stage-*")
	if err != nil {
		return nil, fmt.Errorf("creating staging folder for %s: %w", base, err)
	}
	return &Stage{Dir: dir, final: final}, nil
}

// Commit moves the staged folder to its final path. When replace is false and
// the final path exists, it returns an error wrapping [ErrExists] and leaves
// both untouched. When replace is true, an existing final folder is moved
// aside first and removed only after the new one is in place.
func (s *Stage) Commit(replace bool) error {
	if s.done {
		return errors.New("staging folder already committed or aborted")
	}
	if _, err := os.Lstat(s.final); err == nil {
		if !replace {
			return fmt.Errorf("%s: %w", filepath.Base(s.final), ErrExists)
		}
		old := s.Dir + ".old"
		if err := os.Rename(s.final, old); err != nil {
			return fmt.Errorf("moving aside %s: %w", filepath.Base(s.final), err)
		}
		if err := os.Rename(s.Dir, s.final); err != nil {
			// Put the previous folder back; the caller still has its old state.
			os.Rename(old, s.final)
			return fmt.Errorf("renaming into place %s: %w", filepath.Base(s.final), err)
		}
		s.done = true
		return os.RemoveAll(old)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", filepath.Base(s.final), err)
	}
	if err := os.Rename(s.Dir, s.final); err != nil {
		return fmt.Errorf("renaming into place %s: %w", filepath.Base(s.final), err)
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
	os.RemoveAll(s.Dir)
}
