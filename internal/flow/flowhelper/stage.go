package flowhelper

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

var instanceRE = lazyre.New(`^[0-9A-Za-z][0-9A-Za-z._-]{0,127}$`)

// privateDir makes dir (0700) if missing and refuses a symlink or a
// non-directory there; an existing directory has group/other bits cleared.
func privateDir(dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		st, err = os.Lstat(dir)
	}
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 || !st.IsDir() {
		return fmt.Errorf("%s is not a plain directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// stage writes the embedded program to <state>/tmp/helper-<instance>/
// (docs/helper.md, "Process model"): the directory must not pre-exist (0700), the file
// is O_CREATE|O_EXCL 0600 and fsynced. It returns the directory.
func stage(stateDir, instance string) (string, error) {
	if !instanceRE().MatchString(instance) {
		return "", fmt.Errorf("invalid helper instance id")
	}
	if err := privateDir(stateDir); err != nil {
		return "", err
	}
	tmp := filepath.Join(stateDir, "tmp")
	if err := privateDir(tmp); err != nil {
		return "", err
	}
	dir := filepath.Join(tmp, "helper-"+instance)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	fail := func(err error) (string, error) { _ = os.RemoveAll(dir); return "", err }
	f, err := os.OpenFile(filepath.Join(dir, ProgramName), os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return fail(err)
	}
	if _, err := f.Write(program); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	return dir, nil
}

// Sweep removes what dead owners left in stateDir: every tmp/helper-<id> whose owner is not live, and every
// logs/helper-<id>.log of a dead owner older than 7 days. ownerLive reports
// whether the owner lock of instance id is held. Symlinks are never
// followed; errors are ignored (a sweep never fails startup).
func Sweep(stateDir string, ownerLive func(id string) bool, now time.Time) {
	if ents, err := os.ReadDir(filepath.Join(stateDir, "tmp")); err == nil {
		for _, e := range ents {
			id, ok := strings.CutPrefix(e.Name(), "helper-")
			if !ok || !instanceRE().MatchString(id) || ownerLive(id) {
				continue
			}
			p := filepath.Join(stateDir, "tmp", e.Name())
			if st, err := os.Lstat(p); err == nil && st.IsDir() {
				_ = os.RemoveAll(p)
			} else if err == nil {
				_ = os.Remove(p)
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(stateDir, "logs")); err == nil {
		for _, e := range ents {
			name := e.Name()
			id, ok := strings.CutPrefix(name, "helper-")
			if !ok || !strings.HasSuffix(id, ".log") {
				continue
			}
			id = strings.TrimSuffix(id, ".log")
			if !instanceRE().MatchString(id) || ownerLive(id) {
				continue
			}
			p := filepath.Join(stateDir, "logs", name)
			if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() && now.Sub(st.ModTime()) > 7*24*time.Hour {
				_ = os.Remove(p)
			}
		}
	}
}
