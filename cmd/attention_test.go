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
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
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
	testOnlyEnviron = func() []string { return env }
	t.Cleanup(func() { testOnlyEnviron = nil })
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
	if answer == "<none>" {
		testOnlyTTY = func() (io.ReadWriteCloser, error) { return nil, os.ErrNotExist }
	} else {
		testOnlyTTY = func() (io.ReadWriteCloser, error) { return tty, nil }
	}
	t.Cleanup(func() { testOnlyTTY = nil })
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
		op, _ := flowhelper.Operator()
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

// TestAttentionReplayAfterClose: a same-key retry of a decision Flow
// journaled returns that decision through attended.replay after the item
// closed and the server that decided it is gone, with no terminal, no
// confirmation and no --config (nothing is dispatched); a key whose
// journaled decision is another action, or no decision, is not a replay.
func TestAttentionReplayAfterClose(t *testing.T) {
	const key = "serve-retry-key-000000000001"
	decisionID := strings.Repeat("ab", 16)
	closeItem := func(t *testing.T, f *attFixture, action string) {
		t.Helper()
		run := filepath.Join(f.runs, "run-0001")
		var capab struct {
			Digest string `json:"digest"`
		}
		it, err := attention.Get(f.runs, f.id)
		if err != nil || it.Capability == nil {
			t.Fatalf("fixture item: %v", err)
		}
		capab.Digest = it.Capability.Digest
		// The item closes as after a completed Continue: the pause is gone
		// and the report is a verified success.
		os.Remove(filepath.Join(run, "pending_escalation.json"))
		os.WriteFile(filepath.Join(run, "report.json"), []byte(`{"success":true,"execution_outcome":"VERIFIED","results":[]}`), 0o600)
		if _, err := attention.Get(f.runs, f.id); err == nil {
			t.Fatal("the item is still open")
		}
		j := map[string]any{"decisions": []map[string]any{{"decision_id": decisionID, "idempotency_key": key,
			"request_digest": flowhelper.RequestDigest(action, capab.Digest, key), "capability_digest": capab.Digest,
			"action": action, "status": map[string]string{"reject": "rejected", "continue": "completed"}[action]}}}
		b, _ := json.Marshal(j)
		os.WriteFile(filepath.Join(run, "attended_decisions.json"), b, 0o600)
	}
	replayRule := func(action, status string) fakehelper.Rule {
		return fakehelper.Rule{Op: "attended.replay", Reply: json.RawMessage(`{"decision":{"decision_id":"` + decisionID + `","action":"` + action +
			`","status":"` + status + `","message":"m","report_success":true,"next_transition":null,"transition_receipt_digest":null}}`)}
	}
	t.Run("reject", func(t *testing.T) {
		f := newAttFixture(t, replayRule("reject", "rejected"))
		closeItem(t, f, "reject")
		withTTY(t, "<none>")
		code, out, errs := runCLI("attention", "reject", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--idempotency-key", key)
		if code != 0 || out != "decision "+decisionID+": rejected (idempotency key "+key+")\n" || !strings.Contains(errs, "nothing was dispatched") {
			t.Fatalf("exit %d %q %q", code, out, errs)
		}
		reqs := fakehelper.Requests(t, f.record)
		var ops []string
		for _, r := range reqs {
			ops = append(ops, r["op"].(string))
		}
		if strings.Join(ops, ",") != "hello,attended.replay,close" || len(f.acts(t)) != 0 {
			t.Fatalf("ops %v", ops)
		}
	})
	t.Run("continue needs no live session", func(t *testing.T) {
		f := newAttFixture(t, replayRule("continue", "completed"))
		closeItem(t, f, "continue")
		withTTY(t, "<none>")
		code, out, errs := runCLI("attention", "continue", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--idempotency-key", key)
		if code != 0 || !strings.Contains(out, ": completed") {
			t.Fatalf("exit %d %q %q", code, out, errs)
		}
	})
	t.Run("another action is not a replay", func(t *testing.T) {
		f := newAttFixture(t, replayRule("reject", "rejected"))
		closeItem(t, f, "reject")
		withTTY(t, "<none>")
		code, _, errs := runCLI("attention", "escalate", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--idempotency-key", key, "--yes")
		if code != 1 || !strings.Contains(errs, "no current Needs Attention item") || len(fakehelper.Records(t, f.record)) != 0 {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
	t.Run("Flow has no prior decision", func(t *testing.T) {
		f := newAttFixture(t) // the fake's replay answers no_prior_decision
		closeItem(t, f, "reject")
		withTTY(t, "<none>")
		code, _, errs := runCLI("attention", "reject", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--idempotency-key", key, "--yes")
		if code != 1 || !strings.Contains(errs, "no current Needs Attention item") {
			t.Fatalf("exit %d %q", code, errs)
		}
	})
}

// TestAttentionAuthorityDB (docs/helper.md, Process model): the helper gets the
// durable-authority database serve recorded for the runs directory, even
// when this shell's HOME differs, and says so.
func TestAttentionAuthorityDB(t *testing.T) {
	f := newAttFixture(t)
	db := filepath.Join(t.TempDir(), "serve-home", ".openadapt", "durable-authority", "authority.sqlite3")
	if err := flowhelper.WriteAuthorityRecord(filepath.Join(f.runs, ".openadapt-agent"), db); err != nil {
		// the state folder may not exist yet in the fixture
		os.MkdirAll(filepath.Join(f.runs, ".openadapt-agent"), 0o700)
		if err := flowhelper.WriteAuthorityRecord(filepath.Join(f.runs, ".openadapt-agent"), db); err != nil {
			t.Fatal(err)
		}
	}
	withTTY(t, "<none>")
	code, _, errs := runCLI("attention", "escalate", f.id, "--runs-dir", f.runs, "--flow-python", f.python, "--yes")
	if code != 0 || !strings.Contains(errs, "using the durable-authority database that serve recorded") {
		t.Fatalf("exit %d %q", code, errs)
	}
	recs := fakehelper.Records(t, f.record)
	if len(recs) != 1 || !slices.Contains(recs[0].Env, "OPENADAPT_DURABLE_AUTHORITY_DB="+db) {
		t.Fatalf("helper env %v", recs)
	}
}
