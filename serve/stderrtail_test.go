package serve

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// TestStderrTailKeptLocally: the
// canary fake Flow prints on stderr is kept in <state>/runs/<id>.stderr
// (0600) for the local operator, and reaches neither the wire (run result
// and get_run_report), nor the audit log, nor serve's stderr. The record and
// tail serve writes are the ones internal/runstore reads.
func TestStderrTailKeptLocally(t *testing.T) {
	e, o := runEnv(t)
	o.Environ = append(o.Environ, "OPENADAPT_FAKE_FLOW_STDERR=Traceback: "+canary+"\n")
	s := start(t, o)
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=1"})
	id, _ := r["run_id"].(string)
	if !flowrun.ValidRunID(id) || r["status"] != "halt" {
		t.Fatalf("run result %v", r)
	}
	s.call("get_run_report", map[string]any{"run_id": id})
	s.srv.Close()

	p := filepath.Join(e.runsDir, runstore.StateDirName, "runs", id+".stderr")
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stderr tail file %v %v, want a regular 0600 file", fi, err)
	}
	st, err := runstore.Open(e.runsDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tailData, kept, err := st.Stderr(context.Background(), id)
	if err != nil || !kept || string(tailData) != "Traceback: "+canary+"\n" {
		t.Fatalf("kept tail %q %v %v", tailData, kept, err)
	}
	rec, err := st.Get(context.Background(), id)
	if err != nil || rec.Status() != "halt" || rec.ExitCode == nil || *rec.ExitCode != 1 || rec.WorkflowID != r["workflow_id"] {
		t.Fatalf("serve's record read back: %+v %v", rec, err)
	}
	assertNoCanary(t, "wire", s.out())
	assertNoCanary(t, "stderr", s.stderr.String())
	audit, err := os.ReadFile(filepath.Join(e.runsDir, runstore.StateDirName, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	assertNoCanary(t, "audit log", string(audit))
}

// TestStderrTailBounded: a run printing far more than the cap keeps exactly
// the last flowrun.StderrKeepBytes bytes.
func TestStderrTailBounded(t *testing.T) {
	e, o := runEnv(t)
	s := start(t, o)
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=1;output_bytes=1000000"})
	id, _ := r["run_id"].(string)
	if !flowrun.ValidRunID(id) {
		t.Fatalf("run result %v", r)
	}
	s.srv.Close()
	data, err := os.ReadFile(filepath.Join(e.runsDir, runstore.StateDirName, "runs", id+".stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != flowrun.StderrKeepBytes {
		t.Fatalf("kept %d bytes, want %d", len(data), flowrun.StderrKeepBytes)
	}
	// The fake's stream ends "…flow output line " cut at 1,000,000 bytes:
	// the kept bytes are its tail, not its head.
	line := strings.Repeat("flow output line ", 60) + "\n"
	full := strings.Repeat(line, 1000000/len(line)+1)[:1000000]
	if string(data) != full[len(full)-flowrun.StderrKeepBytes:] {
		t.Fatal("the kept bytes are not the tail of the stream")
	}
}

// TestRecoveryHintsNameRunsShow: every fixed run message
// that sends the operator to the protected local run names the command
// that shows it.
func TestRecoveryHintsNameRunsShow(t *testing.T) {
	n := 0
	for k, m := range runMessages {
		if !strings.Contains(strings.ToLower(m), "inspect the protected local") {
			continue
		}
		n++
		if !strings.Contains(m, "openadapt-agent runs show RUN_ID --protected") {
			t.Errorf("%s: %q does not name `openadapt-agent runs show RUN_ID --protected`", k, m)
		}
	}
	if n < 4 {
		t.Fatalf("%d messages send the operator to the local run, want at least 4 (halt_no_report, timeout, interrupted, error)", n)
	}
}
