package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadOnlyWithoutReadableState: a read-only server whose runs folder
// cannot be read (here a path through a regular file, which fails as an
// unreadable home does, even for root) or cannot be determined (no HOME)
// starts anyway: one warning on stderr, get_run_report answers
// report_unavailable and the Needs Attention queue is empty. Nothing is
// read from or written to the working folder instead.
func TestReadOnlyWithoutReadableState(t *testing.T) {
	e := newEnv(t)
	e.demo("demo", testBundle{})
	file := filepath.Join(e.root, "a-file")
	os.WriteFile(file, nil, 0o600)
	for name, runsDir := range map[string]string{"unreadable": filepath.Join(file, "runs"), "undetermined": ""} {
		t.Run(name, func(t *testing.T) {
			if name == "undetermined" {
				t.Setenv("HOME", "")
				t.Setenv("XDG_STATE_HOME", "")
				// A planted record in the working folder must not be read.
				wd := t.TempDir()
				t.Chdir(wd)
				os.MkdirAll(filepath.Join(wd, "runs"), 0o700)
				os.WriteFile(filepath.Join(wd, "runs", "run-0123456789abcdef01234567.json"), []byte(`{}`), 0o600)
			}
			o := e.opts()
			o.RunsDir = runsDir
			s := start(t, o)
			if b := s.srv.Banner(); !strings.Contains(b, "run state could not be read") {
				t.Fatalf("banner %q: no warning", b)
			}
			if got := s.call("get_run_report", map[string]any{"run_id": "run-0123456789abcdef01234567"}); errorCode(got) != "report_unavailable" {
				t.Fatalf("get_run_report: %v", got)
			}
			got := s.call("list_needs_attention", map[string]any{})
			if items, _ := got["items"].([]any); len(items) != 0 || errorCode(got) != "" {
				t.Fatalf("list_needs_attention: %v", got)
			}
			if got := s.call("list_workflows", map[string]any{}); errorCode(got) != "" {
				t.Fatalf("list_workflows: %v", got)
			}
		})
	}
}
