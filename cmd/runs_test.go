package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/serve"
)

const (
	testRunID  = "run-0123456789abcdef01234567"
	testRunID2 = "run-fedcba9876543210fedcba98"
	testWF     = "workflow_0123456789abcdef01234567"
)

// runsFixture is a runs folder laid out as serve writes it, with one
// terminal run whose kept stderr holds the canary.
type runsFixture struct {
	runs, records string
}

const runsCanary = "Jane Roe MRN-9911 sk_live_secret"

// runsCLI runs the command line in process (attention_test.go's runCLI is
// Unix-only).
func runsCLI(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := Run(context.Background(), args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func newRunsFixture(t *testing.T) *runsFixture {
	t.Helper()
	f := &runsFixture{runs: filepath.Join(t.TempDir(), "runs")}
	f.records = filepath.Join(f.runs, ".openadapt-agent", "runs")
	if err := os.MkdirAll(f.records, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{f.runs, filepath.Dir(f.records), f.records} {
		os.Chmod(d, 0o700)
	}
	f.record(t, testRunID, "2026-12-01T10:00:00Z", `"2026-12-01T10:00:03.5Z"`, "terminal", `{"status":"success","execution_outcome":"VERIFIED","message_key":"success","summary":{"steps_total":2,"steps_ok":2,"steps_skipped":0}}`, "0")
	f.file(t, testRunID+".stderr", "Traceback: "+runsCanary+"\n")
	os.MkdirAll(filepath.Join(f.runs, testRunID), 0o700)
	os.WriteFile(filepath.Join(f.runs, testRunID, "report.json"), []byte(`{"success":true,"intent":"`+runsCanary+`"}`), 0o600)
	return f
}

func (f *runsFixture) record(t *testing.T, id, started, ended, phase, outcome, exit string) {
	t.Helper()
	f.file(t, id+".json", fmt.Sprintf(`{"schema_version":1,"run_id":%q,"workflow_id":%q,"base_workflow_id":%q,"bundle_content_digest":"","owner":"0123456789abcdef","pid":7,"pgid":7,"leader_start":1,"started_at":%q,"ended_at":%s,"phase":%q,"exit_code":%s,"outcome":%s}`,
		id, testWF, testWF, started, ended, phase, exit, outcome))
}

func (f *runsFixture) file(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.records, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunsListAndShow(t *testing.T) {
	f := newRunsFixture(t)
	f.record(t, testRunID2, "2026-12-01T11:00:00Z", "null", "running", "null", "null")

	code, out, errs := runsCLI("runs", "list", "--runs-dir", f.runs, "--json")
	if code != 0 || errs != "" {
		t.Fatalf("list: exit %d, stderr %q", code, errs)
	}
	var list struct {
		MediaType string           `json:"mediaType"`
		Count     int              `json:"count"`
		Runs      []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.MediaType != runListMediaType || list.Count != 2 {
		t.Fatalf("list %s: %v", out, err)
	}
	// Newest first; exactly the allowlisted fields.
	if list.Runs[0]["run_id"] != testRunID2 || list.Runs[0]["status"] != "running" || list.Runs[0]["ended_at"] != nil {
		t.Errorf("first row %v", list.Runs[0])
	}
	want := []string{"duration_ms", "ended_at", "exit_code", "run_id", "started_at", "status", "workflow_id"}
	for _, row := range list.Runs {
		if len(row) != len(want) {
			t.Errorf("row has fields %v, want %v", row, want)
		}
		for _, k := range want {
			if _, ok := row[k]; !ok {
				t.Errorf("row lacks %s", k)
			}
		}
	}
	if list.Runs[1]["duration_ms"] != 3500.0 || list.Runs[1]["exit_code"] != 0.0 {
		t.Errorf("second row %v", list.Runs[1])
	}
	code, out, _ = runsCLI("runs", "list", "--runs-dir", f.runs)
	if code != 0 || !strings.Contains(out, testRunID+"  "+testWF+"  success  2026-12-01 10:00:00Z  2026-12-01 10:00:03Z  3.5s") {
		t.Fatalf("list text %q", out)
	}

	code, out, errs = runsCLI("runs", "show", testRunID, "--runs-dir", f.runs, "--json")
	if code != 0 || errs != "" {
		t.Fatalf("show: exit %d %q", code, errs)
	}
	var doc map[string]any
	json.Unmarshal([]byte(out), &doc)
	if doc["mediaType"] != runMediaType || doc["status"] != "success" || doc["execution_outcome"] != "VERIFIED" ||
		doc["report_path"] != filepath.Join(f.runs, testRunID, "report.json") || doc["message_key"] != "success" {
		t.Fatalf("show %s", out)
	}
	if _, has := doc["protected"]; has {
		t.Error("the default view has a protected member")
	}
	for _, s := range []string{out, errs} {
		if strings.Contains(s, "Jane Roe") || strings.Contains(s, "Traceback") {
			t.Fatalf("the default view shows protected data: %s", s)
		}
	}

	code, out, errs = runsCLI("runs", "show", testRunID, "--runs-dir", f.runs, "--protected", "--json")
	json.Unmarshal([]byte(out), &doc)
	p, _ := doc["protected"].(map[string]any)
	if code != 0 || p["stderr_tail"] != "Traceback: "+runsCanary+"\n" || !strings.Contains(errs, "warning: --protected prints protected data") {
		t.Fatalf("protected show: %d %s %q", code, out, errs)
	}
	// The report body is never printed, even with --protected.
	if strings.Contains(out, `"intent"`) {
		t.Fatal("the report body was printed")
	}
	// An empty tail says so.
	f.file(t, testRunID+".stderr", "")
	if code, out, _ := runsCLI("runs", "show", testRunID, "--runs-dir", f.runs, "--protected"); code != 0 || !strings.HasSuffix(out, "flow stderr: empty (Flow printed nothing on stderr)\n") {
		t.Fatalf("empty tail: %d %q", code, out)
	}
	// A running run has no tail yet: null, not an error.
	code, out, _ = runsCLI("runs", "show", testRunID2, "--runs-dir", f.runs, "--protected", "--json")
	json.Unmarshal([]byte(out), &doc)
	if p, _ := doc["protected"].(map[string]any); code != 0 || p["stderr_tail"] != nil || doc["status"] != "running" || !strings.Contains(doc["message"].(string), "still in progress") {
		t.Fatalf("running run: %d %s", code, out)
	}
}

// TestRunsBadIDs: a malformed id (path separators, dots, the wrong case)
// is a usage error, exit 2 with nothing on stdout, even with --json; an
// unknown one is exit 1 run_not_found.
func TestRunsBadIDs(t *testing.T) {
	f := newRunsFixture(t)
	// A planted record a traversal would reach.
	os.WriteFile(filepath.Join(f.runs, "x.json"), []byte("{}"), 0o600)
	for _, id := range []string{"../x", "../../runs/.openadapt-agent/runs/" + testRunID, testRunID + "/", "run-0123456789ABCDEF01234567", "", strings.Repeat("a", 500)} {
		code, out, errs := runsCLI("runs", "show", id, "--runs-dir", f.runs, "--json")
		if code != exitUsage || out != "" || !strings.Contains(errs, "not a run id") {
			t.Errorf("show %q: exit %d stdout %q stderr %q", id, code, out, errs)
		}
	}
	code, out, errs := runsCLI("runs", "show", "run-"+strings.Repeat("9", 24), "--runs-dir", f.runs, "--json")
	doc := decodeOne(t, []byte(out))
	if e, _ := doc["error"].(map[string]any); code != exitFailed || e["code"] != codeRunNotFound || !strings.Contains(errs, "hint: list the recorded runs") {
		t.Fatalf("unknown id: %d %s %q", code, out, errs)
	}
}

// TestRunsUnsafeDirs: runs list/show and attention list refuse a runs or
// state folder others can write, and never change it.
func TestRunsUnsafeDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	for _, dir := range []string{"runs", "state", "records"} {
		t.Run(dir, func(t *testing.T) {
			f := newRunsFixture(t)
			p := map[string]string{"runs": f.runs, "state": filepath.Dir(f.records), "records": f.records}[dir]
			os.Chmod(p, 0o777)
			for _, args := range [][]string{
				{"runs", "list", "--runs-dir", f.runs, "--json"},
				{"runs", "show", testRunID, "--runs-dir", f.runs, "--protected"},
				{"attention", "list", "--runs-dir", f.runs, "--json"},
			} {
				code, out, errs := runsCLI(args...)
				if code != exitUsage || out != "" || !strings.Contains(errs, "refusing to read the runs or state directory "+p+": it is writable by other users (mode 0777)") {
					t.Errorf("%v: exit %d stdout %q stderr %q", args, code, out, errs)
				}
			}
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o777 {
				t.Errorf("a read-only command changed %s to %v", p, fi.Mode().Perm())
			}
		})
	}
	t.Run("symlinked state", func(t *testing.T) {
		f := newRunsFixture(t)
		state := filepath.Dir(f.records)
		os.Rename(state, state+".real")
		os.Symlink(state+".real", state)
		code, _, errs := runsCLI("runs", "list", "--runs-dir", f.runs)
		if code != exitUsage || !strings.Contains(errs, "it is a symbolic link") {
			t.Errorf("exit %d %q", code, errs)
		}
	})
}

// TestRunsDefaultDir: without --runs-dir the per-user runs folder is read,
// as serve writes it; before serve's first run it simply has no runs.
func TestRunsDefaultDir(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("HOME", state)
	code, out, errs := runsCLI("runs", "list")
	if code != 0 || out != "" || !strings.Contains(errs, "no runs recorded in "+filepath.Join(state, "openadapt-agent", "runs")) {
		t.Fatalf("missing default: %d %q %q", code, out, errs)
	}
	code, out, _ = runsCLI("runs", "list", "--json")
	if doc := decodeOne(t, []byte(out)); code != 0 || doc["count"] != 0.0 {
		t.Fatalf("missing default --json: %d %s", code, out)
	}
	if code, _, _ := runsCLI("runs", "show", testRunID); code != exitFailed {
		t.Fatalf("show in a missing default: exit %d", code)
	}
	// An explicit folder that does not exist is a failed operand.
	code, _, errs = runsCLI("runs", "list", "--runs-dir", filepath.Join(state, "nope"))
	if code != exitFailed || !strings.Contains(errs, "the runs directory does not exist: ") {
		t.Fatalf("explicit missing: %d %q", code, errs)
	}
	// The default is where serve puts it.
	f := newRunsFixture(t)
	os.MkdirAll(filepath.Join(state, "openadapt-agent"), 0o700)
	if err := os.Rename(f.runs, filepath.Join(state, "openadapt-agent", "runs")); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runsCLI("runs", "list"); code != 0 || !strings.Contains(out, testRunID) {
		t.Fatalf("default list: %d %q", code, out)
	}
}

func TestRunsHelpCompletion(t *testing.T) {
	code, _, errs := runForTest(t, "runs", "shwo")
	if code != exitUsage || !strings.Contains(errs, "did you mean 'openadapt-agent runs show'?") {
		t.Errorf("did-you-mean: %d %q", code, errs)
	}
	f := newRunsFixture(t)
	code, out, _ := runForTest(t, "__complete", "runs", "show", "--runs-dir", f.runs, "")
	if code != 0 || !strings.Contains(out, testRunID+"\tsuccess "+testWF) {
		t.Errorf("RUN_ID completion: %d %q", code, out)
	}
	// --runs-dir completes folders only.
	if code, out, _ := runForTest(t, "__complete", "runs", "list", "--runs-dir", ""); code != 0 || !strings.HasSuffix(strings.TrimSpace(out), ":"+fmt.Sprint(int(cobra.ShellCompDirectiveFilterDirs))) {
		t.Errorf("--runs-dir completion: %d %q", code, out)
	}
	// Completion of an unsafe folder offers nothing rather than reading it.
	if runtime.GOOS == "windows" {
		return
	}
	os.Chmod(f.runs, 0o777)
	if _, out, _ := runForTest(t, "__complete", "runs", "show", "--runs-dir", f.runs, ""); strings.Contains(out, testRunID) {
		t.Errorf("completion read an unsafe folder: %q", out)
	}
}

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"ok\n":                       "ok\n",
		"no newline":                 "no newline\n",
		"\x1b]0;title\x07x\n":        `\x1b]0;title\x07x` + "\n",
		"tab\tcr\r\n":                "tab\tcr\\x0d\n",
		"c1 \u009b31m bidi \u202e\n": `c1 \u{009b}31m bidi \u{202e}` + "\n",
		"":                           "",
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunsInterrupted: a canceled context stops the listing with exit 1.
func TestRunsInterrupted(t *testing.T) {
	f := newRunsFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	code := Run(ctx, []string{"runs", "list", "--runs-dir", f.runs, "--json"}, nil, &out, &errb)
	if code != exitFailed {
		t.Fatalf("exit %d", code)
	}
	if doc := decodeOne(t, []byte(out.String())); doc["error"].(map[string]any)["code"] != codeInterrupted {
		t.Fatalf("doc %s", out.String())
	}
}

// TestRecoveryHintCommandExists: the command serve's messages name is a
// real command line of this binary.
func TestRecoveryHintCommandExists(t *testing.T) {
	msg := serve.RunMessage("timeout")
	i := strings.Index(msg, "openadapt-agent runs show ")
	if i < 0 {
		t.Fatalf("timeout copy %q names no runs command", msg)
	}
	words := strings.Fields(strings.TrimRight(strings.SplitN(msg[i:], ",", 2)[0], "."))[1:]
	root := newRootCmd(&IO{In: eofReader{}, Out: &strings.Builder{}, Err: &strings.Builder{}})
	c, rest, err := root.Find(words)
	if err != nil || c.Name() != "show" || c.Flags().Lookup("protected") == nil || len(rest) != 2 || rest[0] != "RUN_ID" {
		t.Fatalf("%v: %v %v %v", words, c.Name(), rest, err)
	}
}
