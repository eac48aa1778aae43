package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFlowOutputText: the log keeps Flow's stdout tail and stderr under
// headings, cut from the front to the last 64 KiB at a character boundary.
func TestFlowOutputText(t *testing.T) {
	t.Parallel()
	small := flowOutputText("Skill written to /x", []byte("warn: a\n"))
	if want := "== openadapt-flow stdout (last part) ==\nSkill written to /x\n== openadapt-flow stderr ==\nwarn: a\n"; string(small) != want {
		t.Fatalf("small = %q", small)
	}
	big := bytes.Repeat([]byte("é"), flowOutputKeep) // 128 KiB of two-byte characters
	big = append([]byte("x"), big...)                // every cut falls inside a character
	got := flowOutputText("", append(big, "last line\n"...))
	if len(got) > flowOutputKeep || len(got) < flowOutputKeep-utf8.UTFMax {
		t.Fatalf("kept %d bytes", len(got))
	}
	if !utf8.Valid(got) || !bytes.HasSuffix(got, []byte("last line\n")) {
		t.Fatalf("kept %q…%q", got[:8], got[len(got)-12:])
	}
}

// TestKeepFlowOutput: the file is 0600 in 0700 folders, the next run
// replaces it (a link planted at its name, symbolic or hard, is replaced,
// never written through), a state folder of ours with group or other bits
// is tightened, and a flow-output that is a link or a file is refused.
func TestKeepFlowOutput(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes and links are POSIX")
	}
	base := t.TempDir()
	state := filepath.Join(base, "state", "openadapt-agent")
	old := flowOutputStateDir
	flowOutputStateDir = func() (string, error) { return state, nil }
	t.Cleanup(func() { flowOutputStateDir = old })

	p, err := keepFlowOutput("skill-emit", []byte("first\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(state, "flow-output", "skill-emit.log"); p != want {
		t.Fatalf("path %s, want %s", p, want)
	}
	mode(t, p, 0o600)
	mode(t, state, 0o700)
	mode(t, filepath.Dir(p), 0o700)

	// Links planted at the log's name: replaced, their targets unchanged.
	outside := filepath.Join(base, "outside.txt")
	os.WriteFile(outside, []byte("keep me\n"), 0o644)
	for _, plant := range []func() error{
		func() error { os.Remove(p); return os.Symlink(outside, p) },
		func() error { os.Remove(p); return os.Link(outside, p) },
	} {
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		if _, err := keepFlowOutput("skill-emit", []byte("second\n")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(outside); string(b) != "keep me\n" {
			t.Fatalf("written through a link: outside holds %q", b)
		}
		if b, _ := os.ReadFile(p); string(b) != "second\n" {
			t.Fatalf("log holds %q", b)
		}
		mode(t, p, 0o600)
	}

	// A state folder of ours that others can enter is tightened.
	os.Chmod(state, 0o777)
	if _, err := keepFlowOutput("skill-emit", []byte("third\n")); err != nil {
		t.Fatal(err)
	}
	mode(t, state, 0o700)

	// flow-output as a link to another folder, or as a file: refused.
	elsewhere := filepath.Join(base, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	os.RemoveAll(filepath.Dir(p))
	os.Symlink(elsewhere, filepath.Dir(p))
	if _, err := keepFlowOutput("skill-emit", []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("linked flow-output: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Fatalf("wrote through the linked folder: %v", ents)
	}
	os.Remove(filepath.Dir(p))
	os.WriteFile(filepath.Dir(p), nil, 0o600)
	if _, err := keepFlowOutput("skill-emit", []byte("x")); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("flow-output a file: %v", err)
	}

	// Another user's state folder is refused, not adopted (needs root to
	// make one).
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o755)
		os.Chown(other, 4242, 4242)
		state = other
		if _, err := keepFlowOutput("skill-emit", []byte("x")); err == nil || !strings.Contains(err.Error(), "another user") {
			t.Fatalf("foreign state folder: %v", err)
		}
		mode(t, other, 0o755)
	}
}

func mode(t *testing.T, p string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Fatalf("%s: mode %04o, want %04o", p, got, want)
	}
}
