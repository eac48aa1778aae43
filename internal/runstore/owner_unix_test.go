//go:build unix

package runstore

import (
	"errors"
	"fmt"
	"os"
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
