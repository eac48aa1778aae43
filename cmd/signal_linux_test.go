package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fswatch"
)

// Signal tests run the real binary (testscript.Main puts it on PATH) and
// send SIGTERM once the child is observed at the point under test: reading
// a file (inotify, internal/testing/fswatch), printing its banner, or
// inside a hung Flow (fakeflow's READY FIFO). No test sleeps; the deadline
// only stops a hang and is not a timing assertion.
// Latencies are measured by BenchmarkShutdownLatency, not here.

const signalDeadline = time.Minute

type child struct {
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *bufio.Reader
	done   chan struct{}
	err    error
	rest   bytes.Buffer // stderr after what the test read
}

func startChild(t testing.TB, dir string, env []string, args ...string) *child {
	t.Helper()
	c := exec.Command("openadapt-agent", args...)
	c.Dir = dir
	c.Env = append(childEnv("HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir()), env...)
	ch := &child{cmd: c, done: make(chan struct{})}
	var err error
	if ch.stdout, err = c.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	se, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	ch.stderr = bufio.NewReader(se)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-ch.done:
		default:
			c.Process.Kill()
		}
	})
	return ch
}

// wait collects stderr and waits for the exit, reading stdout into out
// unless out is nil (then stdout is left unread: a blocked writer).
func (ch *child) wait(t testing.TB, out *bytes.Buffer) int {
	t.Helper()
	go func() {
		io.Copy(&ch.rest, ch.stderr)
		if out != nil {
			io.Copy(out, ch.stdout)
		}
		ch.err = ch.cmd.Wait()
		close(ch.done)
	}()
	select {
	case <-ch.done:
	case <-time.After(signalDeadline):
		ch.cmd.Process.Kill()
		t.Fatalf("%v ignored SIGTERM", ch.cmd.Args[1:])
	}
	return ch.cmd.ProcessState.ExitCode()
}

// hugeBundle writes a bundle whose one listed asset is a sparse 1 TiB file:
// hashing it takes minutes, so only a signal ends verification early.
func hugeBundle(t testing.TB, dir string) string {
	t.Helper()
	huge := filepath.Join(dir, "templates", "huge.png")
	writeTestBundle(t, dir, map[string]any{"schema_version": 3, "name": "huge", "params": map[string]any{}, "steps": []any{}},
		map[string]string{"templates/huge.png": strings.Repeat("0", 64)}, nil)
	os.MkdirAll(filepath.Dir(huge), 0o755)
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<40); err != nil {
		t.Skip("no sparse 1 TiB file here:", err)
	}
	return huge
}

func watchRead(t testing.TB, path string) *fswatch.Watch {
	t.Helper()
	w, ok, err := fswatch.Accessed(path)
	if !ok {
		t.Skip("no inotify")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// TestBundleVerifySIGTERMStopsHashing: `bundle verify --json` hashing a
// 1 TiB asset stops on SIGTERM through its context (exit 1 with the
// interrupted failure document, not the backstop's 143).
func TestBundleVerifySIGTERMStopsHashing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	w := watchRead(t, hugeBundle(t, dir))
	ch := startChild(t, "", nil, "bundle", "verify", "--json", dir)
	if !w.Wait(signalDeadline) {
		t.Fatal("the asset was never read")
	}
	ch.cmd.Process.Signal(syscall.SIGTERM)
	var out bytes.Buffer
	code := ch.wait(t, &out)
	var doc struct {
		Error struct{ Code string } `json:"error"`
	}
	if code != 1 || json.Unmarshal(out.Bytes(), &doc) != nil || doc.Error.Code != "interrupted" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and the interrupted document", code, out.String(), ch.rest.String())
	}
}

// TestBackstopExitsBlockedCommand: a command that cannot notice its
// canceled context (blocked writing to a stdout nobody reads) is exited by
// the backstop with 128+SIGTERM and says so on stderr.
func TestBackstopExitsBlockedCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	params := map[string]any{}
	for i := range 5000 {
		params[fmt.Sprintf("param_%04d", i)] = "x"
	}
	writeTestBundle(t, dir, map[string]any{"schema_version": 3, "name": "many", "params": params, "steps": []any{}}, nil, nil)
	ch := startChild(t, "", nil, "bundle", "verify", "--json", dir)
	// The first bytes prove it is writing its ~400 KiB document; the
	// rest stays unread, so the writer blocks on the full pipe.
	if _, err := io.ReadFull(ch.stdout, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if code := ch.wait(t, nil); code != 128+15 || !strings.Contains(ch.rest.String(), "interrupted by SIGTERM (did not stop within 1s)") {
		t.Fatalf("exit %d, stderr %q; want 143 from the backstop", code, ch.rest.String())
	}
}

// TestServeIdleSIGTERM: an idle serve (its banner printed, waiting on stdin)
// exits on SIGTERM.
func TestServeIdleSIGTERM(t *testing.T) {
	bundles := t.TempDir()
	writeTestBundle(t, filepath.Join(bundles, "a"), map[string]any{"schema_version": 3, "name": "a", "params": map[string]any{"note": "x"}, "steps": []any{}}, nil, nil)
	ch := startChild(t, "", nil, "serve", "--bundles", bundles)
	stdin, _ := ch.cmd.StdinPipe() // never written: serve stays idle
	_ = stdin
	line, err := ch.stderr.ReadString('\n')
	if err != nil || !strings.Contains(line, "serving 1 workflow(s)") {
		t.Fatalf("banner %q %v", line, err)
	}
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if code := ch.wait(t, &bytes.Buffer{}); code == 128+15 {
		t.Fatalf("serve needed the backstop: stderr %q", ch.rest.String())
	}
}

// TestSkillEmitSIGTERMWhileFlowHangs: `skill emit` waiting on a hung Flow
// stops on SIGTERM and leaves no temporary or staging folder in --out.
func TestSkillEmitSIGTERMWhileFlowHangs(t *testing.T) {
	src := filepath.Join(t.TempDir(), "b")
	writeTestBundle(t, src, map[string]any{"schema_version": 3, "name": "a", "params": map[string]any{"note": "x"}, "steps": []any{}}, nil, nil)
	out := filepath.Join(t.TempDir(), "out")
	ready := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	// OPENADAPT_-prefixed knobs pass Flow's child-environment allowlist.
	ch := startChild(t, "", []string{"OPENADAPT_FAKE_FLOW_MODE=hang", "OPENADAPT_FAKE_FLOW_READY=" + ready}, "skill", "emit", src, "--out", out)
	f, err := os.OpenFile(ready, os.O_RDWR, 0) // O_RDWR: the open itself never blocks
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { _, err := f.Read(make([]byte, 1)); got <- err }()
	select {
	case <-got: // the fake Flow hangs in place
	case <-time.After(signalDeadline):
		f.Close()
		ch.cmd.Process.Kill()
		rest, _ := io.ReadAll(ch.stderr)
		t.Fatalf("Flow never hung in place; stderr %q", rest)
	}
	f.Close()
	if ents, _ := os.ReadDir(out); len(ents) != 1 || !strings.HasPrefix(ents[0].Name(), ".openadapt-emit-") {
		t.Fatalf("while Flow runs, --out holds %v; want one .openadapt-emit- folder", ents)
	}
	ch.cmd.Process.Signal(syscall.SIGTERM)
	if code := ch.wait(t, &bytes.Buffer{}); code != 1 {
		t.Fatalf("exit %d, stderr %q; want 1 (canceled)", code, ch.rest.String())
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Fatalf("left %d entries in --out", len(ents))
	}
}
