//go:build unix

package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/procwait"
)

func TestShutdownInterruptsAndCleansUp(t *testing.T) {
	t.Parallel()
	e, o, s, tool := runSession(t, 1)
	pidfile := filepath.Join(e.root, "pids")
	r := s.call(tool, map[string]any{"note": "a", "scenario": "mode=hang-grandchild;report=legacy-success", "idempotency_key": "shutdown-key-0000001"})
	if r["status"] != "running" {
		t.Fatalf("%v", r)
	}
	runID := r["run_id"].(string)
	rec := s.srv.state.Record(runID)
	if rec == nil || rec.PGID == 0 {
		t.Fatalf("record %+v", rec)
	}
	_ = pidfile
	s.srv.Close()
	got := s.srv.state.Record(runID)
	if got.Phase != runstore.PhaseTerminal || got.Outcome.Status != "interrupted" {
		t.Fatalf("record after shutdown %+v", got)
	}
	if !procwait.Exit(rec.PID, time.Minute) {
		t.Fatal("Flow leader survived shutdown")
	}
	if groupAlive(rec.PGID) {
		t.Fatal("process group survived shutdown")
	}
	ents, _ := os.ReadDir(filepath.Join(e.runsDir, ".openadapt-agent", "tmp"))
	if len(ents) != 0 {
		t.Fatalf("leftover temp files %v", ents)
	}
	// The next server reports interrupted, never success.
	s2 := start(t, o)
	rep := s2.call("get_run_report", map[string]any{"run_id": runID})
	if rep["status"] != "interrupted" || !strings.Contains(rep["message"].(string), "interrupted") {
		t.Fatalf("%v", rep)
	}
	replay := s2.call(tool, map[string]any{"note": "a", "scenario": "mode=hang-grandchild;report=legacy-success", "idempotency_key": "shutdown-key-0000001"})
	if replay["status"] != "interrupted" || replay["replayed"] != true {
		t.Fatalf("%v", replay)
	}
}

func TestTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	// The fake writes its pid file only once its grandchild runs. On a
	// loaded machine that can take longer than a short --timeout, which
	// would leave nothing to check, so the timeout grows until the premise
	// holds (each attempt still proves the timeout result).
	for _, timeout := range []float64{0.5, 2, 8, 30} {
		e, o := runEnv(t)
		o.Timeout = timeout
		pidfile := filepath.Join(e.root, "pids")
		o.Environ = append(o.Environ, "OPENADAPT_FAKE_FLOW_PIDFILE="+pidfile)
		s := start(t, o)
		r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "mode=hang-grandchild;report=legacy-success"})
		if r["status"] != "timeout" || r["success"] != false || !strings.Contains(r["message"].(string), "uncertain") {
			t.Fatalf("%v", r)
		}
		data, err := os.ReadFile(pidfile)
		if errors.Is(err, fs.ErrNotExist) {
			t.Logf("--timeout %gs ended the run before its grandchild started; retrying longer", timeout)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var leader, grandchild int
		fmt.Sscanf(string(data), "%d %d", &leader, &grandchild)
		if !procwait.Exit(grandchild, time.Minute) {
			t.Fatalf("grandchild %d survived the timeout", grandchild)
		}
		return
	}
	t.Fatal("the fake Flow never started its grandchild")
}

// groupAlive reports whether any live (non-zombie) process is in group pgid.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-pgid, 0) == nil
	}
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 3 && f[0] != "Z" && f[3] == fmt.Sprint(pgid) {
			return true
		}
	}
	return false
}
