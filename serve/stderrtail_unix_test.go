//go:build unix

package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// TestRecordReadHostile: serve's record read is the shared bounded one
// (internal/runstore): a FIFO record answers at once instead of blocking,
// an oversized or others-writable record is no record, and a FIFO in
// place of a kept stderr tail is never opened (no projection reads it).
func TestRecordReadHostile(t *testing.T) {
	e, o := runEnv(t)
	s := start(t, o)
	records := filepath.Join(e.runsDir, runstore.StateDirName, "runs")
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
		if rec := s.srv.state.Record(bad); rec != nil {
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

// TestReadOnlyServeRefusesUnsafeRunsDir: a read-only server reads the runs
// folder but changes nothing, so an existing one others can write (or a
// symlinked state folder) is refused at startup, exit 2, and left as it is;
// a missing one is fine and stays missing.
func TestReadOnlyServeRefusesUnsafeRunsDir(t *testing.T) {
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "ro"})
	o := e.opts()
	if srv, err := New(o, &syncBuffer{}); err != nil {
		t.Fatalf("missing runs dir: %v", err)
	} else {
		srv.Close()
	}
	if _, err := os.Lstat(e.runsDir); !os.IsNotExist(err) {
		t.Fatalf("a read-only server created %s", e.runsDir)
	}
	state := filepath.Join(e.runsDir, runstore.StateDirName)
	os.MkdirAll(filepath.Join(state, "runs"), 0o700)
	os.Chmod(e.runsDir, 0o700)
	if srv, err := New(o, &syncBuffer{}); err != nil {
		t.Fatalf("private runs dir: %v", err)
	} else {
		srv.Close()
	}
	os.Chmod(state, 0o777)
	_, err := New(o, &syncBuffer{})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Msg != "refusing to read the runs or state directory "+state+": it is writable by other users (mode 0777); a read-only server does not change it: make it private (chmod 700) or pass another --runs-dir" {
		t.Fatalf("err = %v", err)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o777 {
		t.Errorf("a read-only server changed %s to %v", state, fi.Mode().Perm())
	}
	// The same folder with --allow-run is tightened, as before.
	o.AllowRun = true
	srv, err := New(o, &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o700 {
		t.Errorf("a stateful server left %s at %v", state, fi.Mode().Perm())
	}
}
