//go:build unix

package serve

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRecordReadHostile: serve's record read is the shared bounded one
// (internal/runstore): a FIFO record answers at once instead of blocking,
// an oversized or others-writable record is no record, and a FIFO in
// place of a kept stderr tail is never opened (no projection reads it).
func TestRecordReadHostile(t *testing.T) {
	e, o := runEnv(t)
	s := start(t, o)
	records := filepath.Join(e.runsDir, stateDirName, "runs")
	fifo := "run-" + strings.Repeat("3", 24)
	if err := syscall.Mkfifo(filepath.Join(records, fifo+".json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A well-formed record padded past the 64 KiB cap, and one others can write.
	r := s.call(s.runTool(), map[string]any{"note": "a", "scenario": "exit=1"})
	id := r["run_id"].(string)
	body, err := os.ReadFile(filepath.Join(records, id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	big := "run-" + strings.Repeat("4", 24)
	os.WriteFile(filepath.Join(records, big+".json"), []byte(strings.Replace(string(body), id, big, 1)+strings.Repeat(" ", 64<<10)), 0o600)
	loose := "run-" + strings.Repeat("5", 24)
	os.WriteFile(filepath.Join(records, loose+".json"), []byte(strings.Replace(string(body), id, loose, 1)), 0o600)
	os.Chmod(filepath.Join(records, loose+".json"), 0o666)
	// The kept tail of the real run becomes a FIFO: get_run_report must not care.
	os.Remove(filepath.Join(records, id+".stderr"))
	syscall.Mkfifo(filepath.Join(records, id+".stderr"), 0o600)

	for _, bad := range []string{fifo, big, loose} {
		if rec := s.srv.state.readRecord(bad); rec != nil {
			t.Errorf("%s: read %+v, want no record", bad, rec)
		}
		if rep := s.call("get_run_report", map[string]any{"run_id": bad}); errorCode(rep) != "report_unavailable" {
			t.Errorf("%s: %v", bad, rep)
		}
	}
	if rep := s.call("get_run_report", map[string]any{"run_id": id}); rep["status"] != "halt" {
		t.Fatalf("the real run: %v", rep)
	}
}
