//go:build unix

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

type attFixture struct {
	runs, python, record, id string
}

func newAttFixture(t *testing.T, rules ...fakehelper.Rule) *attFixture {
	t.Helper()
	dir := t.TempDir()
	f := &attFixture{runs: filepath.Join(dir, "runs"), python: fakehelper.Install(t), record: filepath.Join(dir, "record")}
	os.MkdirAll(f.runs, 0o700)
	os.MkdirAll(f.record, 0o700)
	src, _ := filepath.Abs("../testdata/flow/attended/runs/run-0001")
	if out, err := exec.Command("cp", "-a", src, filepath.Join(f.runs, "run-0001")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Chmod(filepath.Join(f.runs, "run-0001", ".attended_capability.key"), 0o600)
	f.id = attention.ID("run-0001")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "USER=spoofed", "OPENADAPT_FAKE_HELPER_RECORD=" + f.record}
	if len(rules) > 0 {
		env = append(env, "OPENADAPT_FAKE_HELPER_SCRIPT="+fakehelper.WriteScript(t, rules...))
	}
	old := attentionEnviron
	attentionEnviron = func() []string { return env }
	t.Cleanup(func() { attentionEnviron = old })
	return f
}

// tty fakes the controlling terminal with the typed answer.
type fakeTTY struct {
	io.Reader
	out bytes.Buffer
}

func (f *fakeTTY) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fakeTTY) Close() error                { return nil }

func withTTY(t *testing.T, answer string) *fakeTTY {
	tty := &fakeTTY{Reader: strings.NewReader(answer)}
	old := openTTY
	if answer == "<none>" {
		openTTY = func() (io.ReadWriteCloser, error) { return nil, os.ErrNotExist }
	} else {
		openTTY = func() (io.ReadWriteCloser, error) { return tty, nil }
	}
	t.Cleanup(func() { openTTY = old })
	return tty
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func (f *attFixture) acts(t *testing.T) []map[string]any {
	var out []map[string]any
	for _, r := range fakehelper.Requests(t, f.record) {
		if r["op"] == "attended.act" || r["op"] == "attended.reconcile" {
			out = append(out, r)
		}
	}
	return out
}

func TestAttentionList(t *testing.T) {
	f := newAttFixture(t)
	code, out, errs := runCLI("attention", "list", "--runs-dir", f.runs, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		MediaType string           `json:"mediaType"`
		OpenCount int              `json:"open_count"`
		Items     []map[string]any `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.OpenCount != 1 || doc.Items[0]["id"] != f.id || doc.MediaType == "" {
		t.Fatalf("list %q: %v", out, err)
	}
	if _, has := doc.Items[0]["run_dir"]; has || strings.Contains(out, f.runs) {
		t.Fatal("the default list shows a local path")
	}
	code, out, errs = runCLI("attention", "list", "--runs-dir", f.runs, "--protected")
	if code != 0 || !strings.Contains(out, filepath.Join(f.runs, "run-0001")) || !strings.Contains(errs, "--protected prints protected data") {
		t.Fatalf("protected list: %d %q %q", code, out, errs)
	}
}

func TestAttentionDecide(t *testing.T) {
	t.Run("typed confirmation is human", func(t *testing.T) {
		f := newAttFixture(t)
		tty := withTTY(t, "teach\n")
		code, out, errs := runCLI("attention", "teach", f.id, "--runs-dir", f.runs, "--flow-python", f.python)
		if code != 0 || !strings.Contains(out, ": needs_demonstration") {
			t.Fatalf("exit %d %q %q", code, out, errs)
		}
		if !strings.Contains(tty.out.String(), `Type "teach" to confirm`) {
			t.Errorf("prompt %q", tty.out.String())
		}
		acts := f.acts(t)
		op, _ := attentionOperator()
		if len(acts) != 1 || acts[0]["decided_by"] != "human" || acts[0]["operator"] != op || acts[0]["operator"] == "spoofed" {
			t.Fatalf("acts %v", acts)
		}
	})
	t.Run("--yes is automation", func(t *testing.T) {
		f := newAttFixture(t)
		withTTY(t, "<none>")
		code, out, errs := runCLI("attention", "reject", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--yes")
		if code != 0 || !strings.Contains(out, ": rejected") {
			t.Fatalf("exit %d %q %q", code, out, errs)
		}
		if acts := f.acts(t); len(acts) != 1 || acts[0]["decided_by"] != "automation" {
			t.Fatalf("acts %v", acts)
		}
	})
	t.Run("wrong word", func(t *testing.T) {
		f := newAttFixture(t)
		withTTY(t, "yes\n")
		code, _, errs := runCLI("attention", "escalate", f.id, "--runs-dir", f.runs, "--flow-python", f.python)
		if code != 1 || !strings.Contains(errs, "nothing was dispatched") || len(f.acts(t)) != 0 {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("no tty", func(t *testing.T) {
		f := newAttFixture(t)
		withTTY(t, "<none>")
		code, _, errs := runCLI("attention", "escalate", f.id, "--runs-dir", f.runs, "--flow-python", f.python)
		if code != 2 || !strings.Contains(errs, "controlling terminal") {
			t.Fatalf("exit %d %q", code, errs)
		}
		if recs := fakehelper.Records(t, f.record); len(recs) != 0 {
			t.Fatal("the helper started without a terminal")
		}
	})
	t.Run("--yes refused for continue", func(t *testing.T) {
		f := newAttFixture(t)
		code, _, errs := runCLI("attention", "continue", f.id, "--runs-dir", f.runs, "--yes")
		if code != 2 || !strings.Contains(errs, "unknown flag: --yes") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("continue needs --config", func(t *testing.T) {
		f := newAttFixture(t)
		code, _, errs := runCLI("attention", "continue", f.id, "--runs-dir", f.runs)
		if code != 2 || !strings.Contains(errs, "needs --config") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("continue with a live session", func(t *testing.T) {
		f := newAttFixture(t)
		withTTY(t, "continue\n")
		cfg := filepath.Join(t.TempDir(), "deploy.yaml")
		os.WriteFile(cfg, []byte("backend: {kind: web, url: 'http://127.0.0.1:9/'}\n"), 0o600)
		code, out, errs := runCLI("attention", "continue", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--config", cfg, "--headed")
		if code != 0 || !strings.Contains(out, ": completed") || !strings.Contains(errs, "Complete the paused task yourself") {
			t.Fatalf("exit %d %q %q", code, out, errs)
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		f := newAttFixture(t)
		withTTY(t, "<none>")
		code, _, errs := runCLI("attention", "reject", strings.Repeat("a", 24), "--runs-dir", f.runs, "--yes", "--flow-python", f.python)
		if code != 1 || !strings.Contains(errs, "no current Needs Attention item") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("refused", func(t *testing.T) {
		f := newAttFixture(t, fakehelper.Rule{Op: "attended.act", Error: fakehelper.ErrorFrame("refused", "", true, "")})
		code, _, errs := runCLI("attention", "escalate", f.id, "--runs-dir", f.runs, "--yes", "--flow-python", f.python)
		if code != 1 || !strings.Contains(errs, "Flow refused") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("uncertain", func(t *testing.T) {
		f := newAttFixture(t, fakehelper.Rule{Op: "attended.act", Then: "crash"})
		code, _, errs := runCLI("attention", "reject", f.id, "--runs-dir", f.runs, "--yes", "--flow-python", f.python)
		if code != 1 || !strings.Contains(errs, "attention reconcile") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
}
