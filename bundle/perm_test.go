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

// permRoot builds a root with a readable bundle and, next to it, bundles
// with one unreadable part each: the whole folder, a listed asset,
// workflow.json, the authoritative sidecar manifest.json, the templates
// folder above an asset (no search permission), and a sealed template.
func permRoot(t *testing.T, base string) string {
	root := filepath.Join(base, "root")
	defaultSynth().write(t, filepath.Join(root, "a-ok"))
	defaultSynth().write(t, filepath.Join(root, "b-locked"))
	defaultSynth().write(t, filepath.Join(root, "c-unreadable-asset"))
	defaultSynth().write(t, filepath.Join(root, "d-unreadable-workflow"))
	side := defaultSynth()
	side.SidecarOnly = true
	side.write(t, filepath.Join(root, "e-unreadable-sidecar"))
	defaultSynth().write(t, filepath.Join(root, "f-locked-templates"))
	sealed := defaultSynth()
	sealed.Sealed = "pw"
	sealed.write(t, filepath.Join(root, "g-sealed-unreadable-template"))
	os.Chmod(filepath.Join(root, "c-unreadable-asset/templates/a.png"), 0)
	os.Chmod(filepath.Join(root, "d-unreadable-workflow/workflow.json"), 0)
	os.Chmod(filepath.Join(root, "e-unreadable-sidecar/manifest.json"), 0)
	os.Chmod(filepath.Join(root, "g-sealed-unreadable-template/templates/a.png.enc"), 0)
	t.Cleanup(func() {
		os.Chmod(filepath.Join(root, "b-locked"), 0o755)
		os.Chmod(filepath.Join(root, "f-locked-templates/templates"), 0o755)
	})
	return root
}

// lockDirs removes permissions from the folders of permRoot (after the
// root test widened the others for uid 65534).
func lockDirs(root string) {
	os.Chmod(filepath.Join(root, "b-locked"), 0)
	os.Chmod(filepath.Join(root, "f-locked-templates/templates"), 0o644)
}

const permHelperEnv = "BUNDLE_TEST_PERM_ROOT"

// permResult runs Discover over root and renders the kinds and the error
// texts of every failed bundle.
func permResult(root string) string {
	bs, err := Discover(root, WithKey("pw"))
	var kinds, msgs []string
	for _, b := range bs {
		kinds = append(kinds, filepath.Base(b.Dir)+"="+string(b.Integrity)+"/"+string(b.ErrorKind))
		if b.Err != nil {
			msgs = append(msgs, b.Err.Error())
		}
	}
	out, _ := json.Marshal(map[string]any{"err": fmt.Sprint(err), "kinds": kinds, "messages": msgs})
	return string(out)
}

// TestPermissionHelper is the child half of TestPermissionDenied: it runs
// Discover as an unprivileged user and prints the kinds.
func TestPermissionHelper(t *testing.T) {
	root := os.Getenv(permHelperEnv)
	if root == "" {
		t.Skip("helper process only")
	}
	fmt.Printf("RESULT %s\n", permResult(root))
}

// TestPermissionDenied: a file or folder inside a bundle that cannot be read
// is the Go-only kind unreadable, never missing or
// corrupt, never a panic, and does not stop discovery; the messages name
// the bundle-relative part or the asset index, with no path placeholder and
// no absolute path. Tests run as root here, and root bypasses permission
// bits; so as root the check re-executes this test binary as the
// unprivileged user 65534 (nobody).
func TestPermissionDenied(t *testing.T) {
	if os.Getenv(permHelperEnv) != "" {
		t.Skip("in helper")
	}
	want := `{"err":"\u003cnil\u003e","kinds":["a-ok=verified/","b-locked=failed/unreadable","c-unreadable-asset=failed/unreadable",` +
		`"d-unreadable-workflow=failed/unreadable","e-unreadable-sidecar=failed/unreadable","f-locked-templates=failed/unreadable",` +
		`"g-sealed-unreadable-template=failed/unreadable"],"messages":["unreadable: the bundle folder cannot be read (permission denied)",` +
		`"unreadable: listed asset 0 (templates/a.png) cannot be read (permission denied)",` +
		`"unreadable: workflow.json cannot be read (permission denied)",` +
		`"unreadable: manifest.json cannot be read (permission denied)",` +
		`"unreadable: listed asset 0 (templates/a.png) cannot be read (permission denied)",` +
		`"unreadable: templates/a.png.enc cannot be read (permission denied)"]}`
	if os.Geteuid() != 0 {
		root := permRoot(t, t.TempDir())
		lockDirs(root)
		if got := permResult(root); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
		return
	}
	// Root: build a world-traversable tree and run the helper as nobody.
	base, err := os.MkdirTemp("", "bundle-perm-")
	if err != nil {
		t.Fatal(err)
	}
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
	t.Cleanup(func() { os.RemoveAll(base) }) // runs after permRoot's cleanup restored the modes
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o755)
		}
		return nil
	})
	lockDirs(root)
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
