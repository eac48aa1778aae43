package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

const (
	idA = "run-aaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "run-bbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "run-cccccccccccccccccccccccc"
	wf  = "workflow_0123456789abcdef01234567"
)

// terminalRecord is a record as serve writes it (State.WriteRecord).
func terminalRecord(id, started, ended string) string {
	return fmt.Sprintf(`{"schema_version":1,"run_id":%q,"workflow_id":%q,"base_workflow_id":%q,`+
		`"bundle_content_digest":"%s","owner":"0123456789abcdef","pid":42,"pgid":42,"leader_start":7,`+
		`"started_at":%q,"ended_at":%q,"phase":"terminal","exit_code":1,`+
		`"outcome":{"status":"halt","execution_outcome":"HALTED","message_key":"halt_halted","summary":{"steps_total":3,"steps_ok":2,"steps_skipped":0}}}`,
		id, wf, wf, strings.Repeat("ab", 32), started, ended)
}

func runningRecord(id, started string) string {
	return fmt.Sprintf(`{"schema_version":1,"run_id":%q,"workflow_id":%q,"base_workflow_id":%q,"bundle_content_digest":"",`+
		`"owner":"0123456789abcdef","pid":0,"pgid":0,"leader_start":0,"started_at":%q,"ended_at":null,"phase":"running","exit_code":null,"outcome":null}`,
		id, wf, wf, started)
}

// newRunsDir makes <tmp>/runs with a 0700 state dir and its runs folder.
func newRunsDir(t *testing.T) (runs, records string) {
	t.Helper()
	runs = filepath.Join(t.TempDir(), "runs")
	records = filepath.Join(runs, StateDirName, "runs")
	if err := os.MkdirAll(records, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{runs, filepath.Join(runs, StateDirName), records} {
		os.Chmod(d, 0o700)
	}
	return runs, records
}

func write(t *testing.T, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func open(t *testing.T, runs string) *Store {
	t.Helper()
	s, err := Open(runs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestListAndGet(t *testing.T) {
	runs, records := newRunsDir(t)
	write(t, filepath.Join(records, idA+".json"), terminalRecord(idA, "2026-12-01T10:00:00.5Z", "2026-12-01T10:00:12.75Z"))
	write(t, filepath.Join(records, idB+".json"), runningRecord(idB, "2026-12-01T11:00:00Z"))
	write(t, filepath.Join(records, idC+".json"), `{"schema_version":1}`) // malformed
	write(t, filepath.Join(records, idA+".stderr"), "Traceback: boom\n")
	write(t, filepath.Join(records, "notes.txt"), "ignored")
	write(t, filepath.Join(records, ".run-x.json.tmp-1"), "ignored")
	os.MkdirAll(filepath.Join(runs, idA), 0o700)
	write(t, filepath.Join(runs, idA, "report.json"), "{}")

	s := open(t, runs)
	l, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Runs) != 2 || l.Unreadable != 1 || l.Truncated {
		t.Fatalf("listing: %d runs, %d unreadable, truncated %v", len(l.Runs), l.Unreadable, l.Truncated)
	}
	// Newest first.
	if l.Runs[0].RunID != idB || l.Runs[1].RunID != idA {
		t.Fatalf("order: %s, %s", l.Runs[0].RunID, l.Runs[1].RunID)
	}
	if l.Runs[0].Status() != "running" || l.Runs[0].EndedAt != nil {
		t.Errorf("running record: %+v", l.Runs[0])
	}
	r, err := s.Get(context.Background(), idA)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := r.Duration(); !ok || d.Milliseconds() != 12250 {
		t.Errorf("duration %v %v", d, ok)
	}
	if r.Status() != "halt" || r.Outcome.ExecutionOutcome != "HALTED" || r.Outcome.MessageKey != "halt_halted" || *r.ExitCode != 1 || *r.Outcome.Summary.StepsOK != 2 {
		t.Errorf("record: %+v %+v", r, r.Outcome)
	}
	if p := s.ReportPath(idA); p != filepath.Join(runs, idA, "report.json") {
		t.Errorf("report path %q", p)
	}
	if p := s.ReportPath(idB); p != "" {
		t.Errorf("report path of a run without a report: %q", p)
	}
	data, kept, err := s.Stderr(context.Background(), idA)
	if err != nil || !kept || string(data) != "Traceback: boom\n" {
		t.Errorf("stderr %q %v %v", data, kept, err)
	}
	if _, kept, err := s.Stderr(context.Background(), idB); kept || err != nil {
		t.Errorf("a run without a tail: kept %v, %v", kept, err)
	}
	if _, err := s.Get(context.Background(), "run-"+strings.Repeat("d", 24)); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := s.Get(context.Background(), idC); !errors.Is(err, ErrUnreadable) || strings.Contains(err.Error(), "schema") && strings.Contains(err.Error(), "{") {
		t.Errorf("malformed record: %v", err)
	}
}

// TestBadRunIDs: an id with path separators or dots never reaches the file
// system (a planted file it would name is not read).
func TestBadRunIDs(t *testing.T) {
	runs, records := newRunsDir(t)
	write(t, filepath.Join(records, "x.json"), terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
	s := open(t, runs)
	for _, id := range []string{"../" + idA, idA + "/../x", "run-aaaaaaaaaaaaaaaaaaaaaaa/", "..", "", "x", "RUN-AAAAAAAAAAAAAAAAAAAAAAAA", `run-aaaaaaaaaaaaaaaaaaaaaaa\`} {
		if _, err := s.Get(context.Background(), id); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("Get(%q) = %v, want ErrInvalidRunID", id, err)
		}
		if _, _, err := s.Stderr(context.Background(), id); !errors.Is(err, ErrInvalidRunID) {
			t.Errorf("Stderr(%q) = %v", id, err)
		}
		if p := s.ReportPath(id); p != "" {
			t.Errorf("ReportPath(%q) = %q", id, p)
		}
	}
}

// TestHostileFiles: a symlinked record, a FIFO or symlinked .stderr, an
// oversized record or tail, and a record writable by others are refused
// before they are read, never followed.
func TestHostileFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks and FIFOs")
	}
	runs, records := newRunsDir(t)
	outside := filepath.Join(t.TempDir(), "outside.json")
	write(t, outside, terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
	if err := os.Symlink(outside, filepath.Join(records, idA+".json")); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "sk_live_secret")
	os.Symlink(secret, filepath.Join(records, idA+".stderr"))
	write(t, filepath.Join(records, idB+".json"), terminalRecord(idB, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")+strings.Repeat(" ", int(fsutil.RunRecord.Max)))
	mkfifo(t, filepath.Join(records, idB+".stderr"))
	write(t, filepath.Join(records, idC+".json"), terminalRecord(idC, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
	os.Chmod(filepath.Join(records, idC+".json"), 0o666)
	write(t, filepath.Join(records, idC+".stderr"), strings.Repeat("x", int(fsutil.StderrTail.Max)+1))

	s := open(t, runs)
	for id, want := range map[string]string{idA: "is a symbolic link", idB: "exceeds the run record limit of 64 KiB", idC: "is writable by other users"} {
		_, err := s.Get(context.Background(), id)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), want) {
			t.Errorf("Get(%s) = %v, want %q", id, err, want)
		}
	}
	for id, want := range map[string]string{idA: "is a symbolic link", idB: "is not a regular file", idC: "exceeds the Flow stderr tail limit of 64 KiB"} {
		data, _, err := s.Stderr(context.Background(), id)
		if !errors.Is(err, ErrUnreadable) || !strings.Contains(err.Error(), want) || len(data) != 0 {
			t.Errorf("Stderr(%s) = %q, %v; want %q", id, data, err, want)
		}
	}
	l, err := s.List(context.Background())
	if err != nil || len(l.Runs) != 0 || l.Unreadable != 3 {
		t.Fatalf("listing %+v %v", l, err)
	}
	// A report reached through a link is not offered.
	os.Symlink(t.TempDir(), filepath.Join(runs, idA))
	if p := s.ReportPath(idA); p != "" {
		t.Errorf("report path through a link: %q", p)
	}
}

// TestUnsafeDirs: a runs or state folder that is a link, writable by others
// or owned by another user is refused, and left exactly as it was.
func TestUnsafeDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	for _, tc := range []struct {
		name  string
		setup func(runs, state, records string)
		path  func(runs, state, records string) string
		want  string
	}{
		{"0777 state dir", func(_, state, _ string) { os.Chmod(state, 0o777) }, func(_, s, _ string) string { return s }, "is writable by other users (mode 0777)"},
		{"0777 runs dir", func(runs, _, _ string) { os.Chmod(runs, 0o777) }, func(r, _, _ string) string { return r }, "is writable by other users (mode 0777)"},
		{"group-writable records", func(_, _, rec string) { os.Chmod(rec, 0o770) }, func(_, _, r string) string { return r }, "is writable by other users (mode 0770)"},
		{"symlinked state dir", func(runs, state, _ string) {
			elsewhere := filepath.Join(filepath.Dir(runs), "elsewhere")
			os.Rename(state, elsewhere)
			os.Symlink(elsewhere, state)
		}, func(_, s, _ string) string { return s }, "is a symbolic link"},
		{"symlinked runs dir", func(runs, _, _ string) {
			real := runs + ".real"
			os.Rename(runs, real)
			os.Symlink(real, runs)
		}, func(r, _, _ string) string { return r }, "is a symbolic link"},
		{"state dir is a file", func(_, state, _ string) {
			os.RemoveAll(state)
			os.WriteFile(state, nil, 0o600)
		}, func(_, s, _ string) string { return s }, "is not a folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, records := newRunsDir(t)
			state := filepath.Dir(records)
			write(t, filepath.Join(records, idA+".json"), terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
			tc.setup(runs, state, records)
			before := modes(t, runs)
			_, err := Open(runs)
			var ue *UnsafeDirError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafeDir) || ue.Path != tc.path(runs, state, records) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open = %v, want %q on %s", err, tc.want, tc.path(runs, state, records))
			}
			if err := CheckRunsDir(runs); !errors.Is(err, ErrUnsafeDir) {
				t.Errorf("CheckRunsDir = %v", err)
			}
			if after := modes(t, runs); after != before {
				t.Errorf("a read-only check changed the folders:\n%s\nto\n%s", before, after)
			}
		})
	}
}

// TestForeignOwnerChown is the real thing when running as root (CI).
func TestForeignOwnerChown(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		t.Skip("needs root to give a folder to another user")
	}
	runs, records := newRunsDir(t)
	if err := os.Chown(filepath.Dir(records), 54321, 54321); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(runs); !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), "owned by another user (uid 54321)") {
		t.Fatalf("Open = %v", err)
	}
}

func TestMissingDirs(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, ErrNoRunsDir) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing runs dir: %v", err)
	}
	// A runs folder serve never wrote state into has no runs.
	runs := t.TempDir()
	os.Chmod(runs, 0o755)
	s := open(t, runs)
	l, err := s.List(context.Background())
	if err != nil || len(l.Runs) != 0 || l.Unreadable != 0 {
		t.Errorf("empty listing %+v %v", l, err)
	}
	if _, err := s.Get(context.Background(), idA); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get = %v", err)
	}
}

// TestRecordValidation: every field that reaches output must match its
// pattern; anything else makes the record unreadable, and the error never
// quotes the value.
func TestRecordValidation(t *testing.T) {
	good := terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	if _, err := parseRecord([]byte(good), idA); err != nil {
		t.Fatalf("good record: %v", err)
	}
	const canary = "Jane Roe MRN-9911"
	for name, body := range map[string]string{
		"other id":            strings.Replace(good, idA, idB, 1),
		"workflow id":         strings.Replace(good, `"workflow_id":"`+wf, `"workflow_id":"`+canary, 1),
		"base id":             strings.Replace(good, `"base_workflow_id":"`+wf, `"base_workflow_id":"../`+canary, 1),
		"digest":              strings.Replace(good, strings.Repeat("ab", 32), canary, 1),
		"status":              strings.Replace(good, `"status":"halt"`, `"status":"`+canary+`"`, 1),
		"outcome":             strings.Replace(good, `"HALTED"`, `"`+canary+`"`, 1),
		"message key":         strings.Replace(good, `"halt_halted"`, `"`+canary+`"`, 1),
		"started":             strings.Replace(good, `"2026-12-01T10:00:00Z"`, `"`+canary+`"`, 1),
		"negative steps":      strings.Replace(good, `"steps_ok":2`, `"steps_ok":-2`, 1),
		"schema":              strings.Replace(good, `"schema_version":1`, `"schema_version":3`, 1),
		"schema zero":         strings.Replace(good, `"schema_version":1`, `"schema_version":0`, 1),
		"transaction outcome": strings.Replace(good, `"message_key"`, `"transaction_outcome":"`+canary+`","message_key"`, 1),
		"transaction case":    strings.Replace(good, `"message_key"`, `"transaction_outcome":"halted_before_effect","message_key"`, 1),
		"checks on a halt":    strings.Replace(good, `"message_key"`, `"failed_checks":["other"],"message_key"`, 1),
		"check text": strings.Replace(strings.Replace(good, `"status":"halt","execution_outcome":"HALTED"`, `"status":"refused"`, 1),
			`"message_key"`, `"failed_checks":["`+canary+`"],"message_key"`, 1),
		"checks type": strings.Replace(strings.Replace(good, `"status":"halt","execution_outcome":"HALTED"`, `"status":"refused"`, 1),
			`"message_key"`, `"failed_checks":"other","message_key"`, 1),
		"too many checks": strings.Replace(strings.Replace(good, `"status":"halt","execution_outcome":"HALTED"`, `"status":"refused"`, 1),
			`"message_key"`, `"failed_checks":[`+strings.TrimSuffix(strings.Repeat(`"other",`, 33), ",")+`],"message_key"`, 1),
		"phase":                strings.Replace(good, `"phase":"terminal"`, `"phase":"`+canary+`"`, 1),
		"terminal no end":      strings.Replace(good, `"ended_at":"2026-12-01T10:00:01Z"`, `"ended_at":null`, 1),
		"exit code":            strings.Replace(good, `"exit_code":1`, `"exit_code":100000`, 1),
		"two documents":        good + good,
		"array":                "[" + good + "]",
		"running with outcome": strings.Replace(good, `"phase":"terminal"`, `"phase":"running"`, 1),
		// serve joins an owner into a path under the state folder.
		"owner path":     strings.Replace(good, `"owner":"0123456789abcdef"`, `"owner":"../../../../x.lck"`, 1),
		"owner hex case": strings.Replace(good, `"owner":"0123456789abcdef"`, `"owner":"0123456789ABCDEF"`, 1),
		"owner length":   strings.Replace(good, `"owner":"0123456789abcdef"`, `"owner":"0123456789abcde"`, 1),
		"negative pid":   strings.Replace(good, `"pid":42`, `"pid":-42`, 1),
		// One reading for every reader: encoding/json alone would take the
		// last of two keys and replace invalid UTF-8.
		"duplicate key": strings.Replace(good, `"phase":"terminal"`, `"phase":"running","phase":"terminal"`, 1),
		"invalid UTF-8": strings.Replace(good, `"HALTED"`, "\"HALT\xffED\"", 1),
	} {
		_, err := parseRecord([]byte(body), idA)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "Jane") {
			t.Errorf("%s: the error quotes the value: %v", name, err)
		}
	}
}

// TestRecordVersions: this build writes version 2 and reads versions 1 and
// 2; a version 1 record has no transaction outcome or failed checks, which
// read as unknown (empty).
func TestRecordVersions(t *testing.T) {
	if SchemaVersion != 2 {
		t.Fatalf("SchemaVersion = %d", SchemaVersion)
	}
	v1 := terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	f, err := ParseFile([]byte(v1), idA)
	if err != nil || f.Outcome.TransactionOutcome != "" || f.Outcome.FailedChecks != nil {
		t.Fatalf("v1: %+v %v", f, err)
	}
	v2 := strings.Replace(strings.Replace(v1, `"schema_version":1`, `"schema_version":2`, 1),
		`"steps_skipped":0}}}`, `"steps_skipped":0},"transaction_outcome":"HALTED_BEFORE_EFFECT"}}`, 1)
	f, err = ParseFile([]byte(v2), idA)
	if err != nil || f.Outcome.TransactionOutcome != "HALTED_BEFORE_EFFECT" {
		t.Fatalf("v2: %+v %v", f, err)
	}
	refused := strings.Replace(strings.Replace(v2, `"status":"halt","execution_outcome":"HALTED"`, `"status":"refused"`, 1),
		`"transaction_outcome":"HALTED_BEFORE_EFFECT"`, `"failed_checks":["not_certified","a_code_from_a_newer_build"]`, 1)
	f, err = ParseFile([]byte(refused), idA)
	if err != nil || !slices.Equal(f.Outcome.FailedChecks, []flowrun.FailedCheck{"not_certified", "a_code_from_a_newer_build"}) {
		t.Fatalf("refused: %+v %v", f, err)
	}
	out, _ := json.Marshal(f)
	if string(out) != refused {
		t.Errorf("round trip:\n got %s\nwant %s", out, refused)
	}
}

// TestFileRoundTrip: a record serve writes (json.Marshal of File) parses
// back to the same File, and the bytes are the format the readers pin.
func TestFileRoundTrip(t *testing.T) {
	for _, body := range []string{
		terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01.5Z"),
		runningRecord(idA, "2026-12-01T10:00:00Z"),
	} {
		f, err := ParseFile([]byte(body), idA)
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != body {
			t.Errorf("round trip:\n got %s\nwant %s", out, body)
		}
	}
}

// TestFreeze: the one freeze makes a running record terminal once; a
// terminal record is never changed (an interrupted run is never upgraded).
func TestFreeze(t *testing.T) {
	f, err := ParseFile([]byte(runningRecord(idA, "2026-12-01T10:00:00Z")), idA)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 10, 0, 2, 0, time.FixedZone("x", 3600))
	if !f.Freeze(Outcome{Status: flowrun.StatusInterrupted, MessageKey: "interrupted"}, at) {
		t.Fatal("running record not frozen")
	}
	if f.Phase != PhaseTerminal || f.EndedAt == nil || *f.EndedAt != "2026-12-01T09:00:02Z" || f.Outcome.Status != flowrun.StatusInterrupted {
		t.Fatalf("frozen: %+v", f)
	}
	if f.Freeze(Outcome{Status: flowrun.StatusSuccess, MessageKey: "success"}, at.Add(time.Hour)) {
		t.Fatal("a terminal record was frozen again")
	}
	if f.Outcome.Status != flowrun.StatusInterrupted || *f.EndedAt != "2026-12-01T09:00:02Z" {
		t.Fatalf("a terminal record changed: %+v", f)
	}
	data, _ := json.Marshal(f)
	if _, err := ParseFile(data, idA); err != nil {
		t.Fatalf("a frozen record does not parse: %v", err)
	}
}

func TestValidOwner(t *testing.T) {
	for id, want := range map[string]bool{
		"0123456789abcdef": true, strings.Repeat("ab", 12): true,
		"": false, "0123456789abcde": false, "0123456789abcdeg": false, "../../../../x.lck": false,
		"0123456789ABCDEF": false, strings.Repeat("ab", 10): false,
	} {
		if ValidOwner(id) != want {
			t.Errorf("ValidOwner(%q) = %v", id, !want)
		}
	}
}

// TestCapsMatchFlowrun: the reader's cap is the writer's.
func TestCapsMatchFlowrun(t *testing.T) {
	if fsutil.StderrTail.Max != flowrun.StderrKeepBytes {
		t.Fatalf("fsutil.StderrTail %d != flowrun.StderrKeepBytes %d", fsutil.StderrTail.Max, flowrun.StderrKeepBytes)
	}
}

// modes renders the mode of every folder beneath root (links not followed).
func modes(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(filepath.Dir(root), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err == nil {
			fmt.Fprintf(&b, "%s %v\n", p, fi.Mode())
		}
		return nil
	})
	return b.String()
}

// TestRecordFileRead: the state folder reads a record the same way as Get.
func TestRecordFileRead(t *testing.T) {
	runs, records := newRunsDir(t)
	state := filepath.Dir(records)
	body := terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	write(t, filepath.Join(records, idA+".json"), body)
	os.Symlink(filepath.Join(records, idA+".json"), filepath.Join(records, idB+".json"))
	if b, err := readRecordFile(context.Background(), state, idA); err != nil || string(b) != body {
		t.Fatalf("ReadRecordFile = %q, %v", b, err)
	}
	if _, err := readRecordFile(context.Background(), state, idB); !errors.Is(err, ErrUnreadable) {
		t.Errorf("symlinked: %v", err)
	}
	if _, err := readRecordFile(context.Background(), state, idC); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if _, err := readRecordFile(context.Background(), filepath.Join(runs, "nope"), idA); !errors.Is(err, ErrNotFound) {
		t.Errorf("no state dir: %v", err)
	}
	if _, err := readRecordFile(context.Background(), state, "../"+idA); !errors.Is(err, ErrInvalidRunID) {
		t.Errorf("bad id: %v", err)
	}
}

// TestListTruncated: a folder with more than MaxListed records is listed
// partially (the cap lowered to 5 here), and says so.
func TestListTruncated(t *testing.T) {
	testOnlyMaxListed = 5
	defer func() { testOnlyMaxListed = MaxListed }()
	runs, records := newRunsDir(t)
	body := terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("run-%024x", i)
		write(t, filepath.Join(records, id+".json"), strings.Replace(body, idA, id, 1))
	}
	l, err := open(t, runs).List(context.Background())
	if err != nil || !l.Truncated || len(l.Runs) != 5 {
		t.Fatalf("listing of 6 records: %d runs, truncated %v, %v", len(l.Runs), l.Truncated, err)
	}
	testOnlyMaxListed = 6
	if l, err := open(t, runs).List(context.Background()); err != nil || l.Truncated || len(l.Runs) != 6 {
		t.Fatalf("listing at the cap: %d runs, truncated %v, %v", len(l.Runs), l.Truncated, err)
	}
}

// TestLookalikeKeysRefused: a run record or binding with a key that
// differs from a field only in case, or with an unknown key, is unreadable:
// {"status":"halt","Status":"success"} used to read as a successful run,
// and "Run_ID" could redirect a binding to another run.
func TestLookalikeKeysRefused(t *testing.T) {
	t.Parallel()
	runs, records := newRunsDir(t)
	halt := terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	for id, body := range map[string]string{
		idA: strings.Replace(halt, `"status":"halt"`, `"status":"halt","Status":"success"`, 1),
		idB: strings.Replace(strings.Replace(halt, idA, idB, 1), `"phase":"terminal"`, `"phase":"terminal","Phase":"running"`, 1),
		idC: strings.Replace(strings.Replace(halt, idA, idC, 1), `"exit_code":1`, `"exit_code":1,"note":"x"`, 1),
	} {
		write(t, filepath.Join(records, id+".json"), body)
	}
	s := open(t, runs)
	for _, id := range []string{idA, idB, idC} {
		if r, err := s.Get(context.Background(), id); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: %+v %v, want unreadable", id, r, err)
		}
	}
	st := prepare(t, runs)
	b, err := st.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	write(t, b.path("retry-key-0000000002"), `{"digest":"d","run_id":"`+idA+`","Run_ID":"`+idB+`","created_at":"x"}`)
	synctest.Test(t, func(t *testing.T) {
		if got, err := b.Lookup("retry-key-0000000002"); got != nil || !errors.Is(err, ErrBindingUnreadable) {
			t.Errorf("Lookup = %+v %v", got, err)
		}
	})
}
