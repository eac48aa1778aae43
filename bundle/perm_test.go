//go:build unix

package bundle

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// permRoot builds a root with a readable bundle, a child folder without any
// permission, and a bundle whose template is unreadable.
func permRoot(t *testing.T, base string) string {
	root := filepath.Join(base, "root")
	defaultSynth().write(t, filepath.Join(root, "a-ok"))
	defaultSynth().write(t, filepath.Join(root, "b-locked"))
	defaultSynth().write(t, filepath.Join(root, "c-unreadable-asset"))
	os.Chmod(filepath.Join(root, "c-unreadable-asset/templates/a.png"), 0)
	os.Chmod(filepath.Join(root, "b-locked"), 0)
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "b-locked"), 0o755) })
	return root
}

const permHelperEnv = "BUNDLE_TEST_PERM_ROOT"

// TestPermissionHelper is the child half of TestPermissionDenied: it runs
// Discover as an unprivileged user and prints the kinds.
func TestPermissionHelper(t *testing.T) {
	root := os.Getenv(permHelperEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	bs, err := Discover(root)
	var kinds []string
	for _, b := range bs {
		kinds = append(kinds, filepath.Base(b.Dir)+"="+string(b.Integrity)+"/"+string(b.ErrorKind))
	}
	out, _ := json.Marshal(map[string]any{"err": fmt.Sprint(err), "kinds": kinds})
	fmt.Printf("RESULT %s\n", out)
}

// TestPermissionDenied: a bundle folder without permission and an unreadable
// asset give typed failures, never a panic, and do not stop discovery. Tests
// run as root here, and root bypasses permission bits; so as root the check
// re-executes this test binary as the unprivileged user 65534 (nobody).
func TestPermissionDenied(t *testing.T) {
	if os.Getenv(permHelperEnv) != "" {
		t.Skip("in helper")
	}
	want := `{"err":"\u003cnil\u003e","kinds":["a-ok=verified/","b-locked=failed/not_a_bundle","c-unreadable-asset=failed/asset_missing"]}`
	if os.Geteuid() != 0 {
		root := permRoot(t, t.TempDir())
		bs, err := Discover(root)
		var kinds []string
		for _, b := range bs {
			kinds = append(kinds, filepath.Base(b.Dir)+"="+string(b.Integrity)+"/"+string(b.ErrorKind))
		}
		got, _ := json.Marshal(map[string]any{"err": fmt.Sprint(err), "kinds": kinds})
		if string(got) != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
		return
	}
	// Root: build a world-traversable tree and run the helper as nobody.
	base, err := os.MkdirTemp("", "bundle-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(base, "root/b-locked"), 0o755); os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	exe, err := os.Executable()
	if err != nil {
		t.Skip("cannot find the test binary:", err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Skip("cannot copy the test binary:", err)
	}
	bin := filepath.Join(base, "bundle.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	root := permRoot(t, base)
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && filepath.Base(p) != "b-locked" {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	cmd := exec.Command(bin, "-test.run=^TestPermissionHelper$", "-test.v")
	cmd.Env = []string{permHelperEnv + "=" + root, "HOME=/"}
	cmd.Dir = base
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Skipf("cannot run the helper as uid 65534 (%v): %s", err, out)
	}
	var got string
	for _, line := range splitLines(string(out)) {
		if len(line) > 7 && line[:7] == "RESULT " {
			got = line[7:]
		}
	}
	if got != want {
		t.Fatalf("as nobody: got %s\nwant %s\noutput:\n%s", got, want, out)
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
