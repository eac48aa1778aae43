//go:build unix

package runstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForeignOwner simulates another user's folders by changing who "this
// user" is (a real chown needs root; serve's tests do that one).
func TestForeignOwner(t *testing.T) {
	runs, _ := newRunsDir(t)
	me := os.Geteuid()
	testOnlyEUID = func() int { return me + 1 }
	defer func() { testOnlyEUID = os.Geteuid }()
	_, err := Open(runs)
	if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), fmt.Sprintf("is owned by another user (uid %d)", me)) {
		t.Fatalf("Open = %v", err)
	}
	if fi, _ := os.Stat(runs); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode changed: %v", fi.Mode())
	}
}

// TestPrepareForeignOwner: a folder of another user is an *UnsafeDirError
// and is not changed ("another user" simulated, as in TestForeignOwner).
func TestPrepareForeignOwner(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	os.Mkdir(runs, 0o777)
	os.Chmod(runs, 0o777)
	me := os.Geteuid()
	testOnlyEUID = func() int { return me + 1 }
	defer func() { testOnlyEUID = os.Geteuid }()
	_, err := Prepare(runs)
	var ue *UnsafeDirError
	if !errors.As(err, &ue) || ue.Path != runs || !strings.Contains(ue.Reason, "not owned by this user") {
		t.Fatalf("Prepare = %v", err)
	}
	if fi, _ := os.Stat(runs); fi.Mode().Perm() != 0o777 {
		t.Errorf("a foreign folder was changed: %v", fi.Mode().Perm())
	}
	if _, err := os.Lstat(filepath.Join(runs, StateDirName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a state folder was created in a foreign folder: %v", err)
	}
}
