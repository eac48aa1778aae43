package flowrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestChildEnv(t *testing.T) {
	server := []string{
		"PATH=/bin", "HOME=/h", "USER=u", "LOGNAME=u", "TMPDIR=/t", "TZ=UTC", "LANG=C", "LANGUAGE=en",
		"DISPLAY=:0", "WAYLAND_DISPLAY=w", "XAUTHORITY=x", "DBUS_SESSION_BUS_ADDRESS=d",
		"SSL_CERT_FILE=f", "SSL_CERT_DIR=d", "REQUESTS_CA_BUNDLE=r", "CURL_CA_BUNDLE=c",
		"NODE_EXTRA_CA_CERTS=n", "PLAYWRIGHT_BROWSERS_PATH=p",
		"LC_ALL=C", "XDG_CONFIG_HOME=/c", "OPENADAPT_BUNDLE_KEY=k", "OPENADAPT_FLOW_SECRET_PIN=1",
		"OPENADAPT_DURABLE_AUTHORITY_DB=/db",
		"AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=g", "ANTHROPIC_API_KEY=a", "OPENAI_API_KEY=o",
		"HTTP_PROXY=h", "HTTPS_PROXY=h", "NO_PROXY=n", "PYTHONPATH=p", "PYTHONSTARTUP=p", "PYTHONHOME=p",
		"NODE_OPTIONS=n", "LD_PRELOAD=l", "LD_LIBRARY_PATH=l", "DYLD_INSERT_LIBRARIES=d", "VIRTUAL_ENV=v",
		"openadapt_bundle_key=lower", "path=lower", "SYSTEMROOT=C:\\Windows", "=C:=C:\\", "NOEQUALS",
		"MY_VAR=1", "PATH=/usr/bin",
	}
	got := childEnv(server, []string{"MY_VAR", "UNSET_VAR", "bad name", "1BAD"}, false)
	want := []string{
		"PATH=/usr/bin", "HOME=/h", "USER=u", "LOGNAME=u", "TMPDIR=/t", "TZ=UTC", "LANG=C", "LANGUAGE=en",
		"DISPLAY=:0", "WAYLAND_DISPLAY=w", "XAUTHORITY=x", "DBUS_SESSION_BUS_ADDRESS=d",
		"SSL_CERT_FILE=f", "SSL_CERT_DIR=d", "REQUESTS_CA_BUNDLE=r", "CURL_CA_BUNDLE=c",
		"NODE_EXTRA_CA_CERTS=n", "PLAYWRIGHT_BROWSERS_PATH=p",
		"LC_ALL=C", "XDG_CONFIG_HOME=/c", "OPENADAPT_BUNDLE_KEY=k", "OPENADAPT_FLOW_SECRET_PIN=1",
		"OPENADAPT_DURABLE_AUTHORITY_DB=/db", "MY_VAR=1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unix (-want +got):\n%s", diff)
	}

	// Windows: names fold case, and the Windows basics pass.
	got = childEnv([]string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "ComSpec=cmd", "ProgramFiles(x86)=p",
		"openadapt_bundle_key=k", "Aws_Secret=s", "My_Var=1", "=C:=C:\\"}, []string{"MY_VAR"}, true)
	want = []string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "ComSpec=cmd", "ProgramFiles(x86)=p",
		"openadapt_bundle_key=k", "My_Var=1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}

	if got := ChildEnv(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("ChildEnv(nil) = %#v, want empty non-nil", got)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATH=/bin", "HOME=/h", "EMPTY=", "NOEQUALS", "=C:=C:\\", "PATHEXT=x", "Path=/win", "PATH=/usr/bin", "A=b=c"}
	for _, tc := range []struct {
		name    string
		windows bool
		want    string
	}{
		{"PATH", false, "/usr/bin"}, // the last entry wins
		{"HOME", false, "/h"},
		{"EMPTY", false, ""},
		{"NOEQUALS", false, ""},
		{"MISSING", false, ""},
		{"PAT", false, ""}, // a prefix is not a name
		{"A", false, "b=c"},
		{"path", false, ""},
		{"path", true, "/usr/bin"}, // Windows folds case
		{"Path", true, "/usr/bin"},
		{"", false, ""},
	} {
		if got := envValue(env, tc.name, tc.windows); got != tc.want {
			t.Errorf("envValue(%q, windows=%v) = %q, want %q", tc.name, tc.windows, got, tc.want)
		}
	}
	if got := EnvValue(nil, "PATH"); got != "" {
		t.Errorf("EnvValue(nil) = %q", got)
	}
}

func TestEnvWithout(t *testing.T) {
	env := []string{"A=1", "B=2", "A=3", "a=4", "AB=5", "NOEQUALS", "A"}
	if diff := cmp.Diff([]string{"B=2", "a=4", "AB=5", "NOEQUALS"}, envWithout(env, "A", false)); diff != "" {
		t.Errorf("unix (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"B=2", "AB=5", "NOEQUALS"}, envWithout(env, "A", true)); diff != "" {
		t.Errorf("windows (-want +got):\n%s", diff)
	}
	if got := EnvWithout(nil, "A"); got == nil || len(got) != 0 {
		t.Errorf("EnvWithout(nil) = %#v, want empty non-nil", got)
	}
}

func TestValidPassEnvName(t *testing.T) {
	for _, n := range []string{"A", "_", "HTTPS_PROXY", "a1", strings.Repeat("A", 128)} {
		if !ValidPassEnvName(n) {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range []string{"", "1A", "A-B", "A=B", "A B", strings.Repeat("A", 129), "É"} {
		if ValidPassEnvName(n) {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestRunIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := NewRunID()
		if !ValidRunID(id) || seen[id] {
			t.Fatalf("NewRunID = %q", id)
		}
		seen[id] = true
	}
	for _, s := range []string{"", "run-", "../secrets", "a/b", "..", "run-" + strings.Repeat("A", 24), "run-" + strings.Repeat("0", 23), "run-" + strings.Repeat("0", 24) + "\n"} {
		if ValidRunID(s) {
			t.Errorf("ValidRunID(%q) = true", s)
		}
	}
}

func TestArgs(t *testing.T) {
	r := Request{Flow: []string{"python3", "-m", "openadapt_flow"}, BundleDir: "/b", RunsDir: "/r", RunID: "run-0123456789abcdef01234567"}
	want := []string{"python3", "-m", "openadapt_flow", "run", "/b", "--run-dir", "/r/run-0123456789abcdef01234567", "--params-file", "/p.json"}
	if diff := cmp.Diff(want, r.Args("/p.json")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"f", "certify", "/b", "--policy", "p", "--config", "c.yaml"}, CertifyArgs([]string{"f"}, "/b", "p", "c.yaml")); diff != "" {
		t.Errorf("certify (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"f", "certify", "/b"}, CertifyArgs([]string{"f"}, "/b", "", "")); diff != "" {
		t.Errorf("certify bare (-want +got):\n%s", diff)
	}
}

func TestParamsFile(t *testing.T) {
	dir := t.TempDir()
	id := NewRunID()
	p, err := writeParamsFile(dir, id, map[string]string{"b": "<2 & 3>", "a": "Zoë \u2028"})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	data, _ := os.ReadFile(p)
	if !bytes.HasPrefix(data, []byte(`{"a":"Zo`)) || !utf8.Valid(data) {
		t.Errorf("content %s", data)
	}
	if _, err := writeParamsFile(dir, id, nil); !errors.Is(err, ErrParamsFile) {
		t.Errorf("second write: %v", err)
	}
	if _, err := writeParamsFile(dir, "../x", nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("bad id: %v", err)
	}
	if _, err := writeParamsFile(filepath.Join(dir, "missing"), NewRunID(), nil); !errors.Is(err, ErrParamsFile) {
		t.Errorf("missing dir: %v", err)
	}
	if err := RemoveParamsFile(p); err != nil {
		t.Error(err)
	}
	if err := RemoveParamsFile(p); err != nil {
		t.Errorf("removing twice: %v", err)
	}
	if err := RemoveParamsFile(""); err != nil {
		t.Error(err)
	}
}

func TestSweepParamsFiles(t *testing.T) {
	dir := t.TempDir()
	keep, gone := NewRunID(), NewRunID()
	for _, name := range []string{ParamsFileName(keep), ParamsFileName(gone), "params-run-x.json", "other.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	n, err := SweepParamsFiles(dir, func(id string) bool { return id == keep })
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"other.json", ParamsFileName(keep), "params-run-x.json"}
	if diff := cmp.Diff(want, left); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	if n, err := SweepParamsFiles(filepath.Join(dir, "missing"), nil); n != 0 || err != nil {
		t.Errorf("missing dir: %d %v", n, err)
	}
}

// TestReadReportSafety: the report's path rules (see ReadReport).
func TestReadReportSafety(t *testing.T) {
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	outside := filepath.Join(root, "outside")
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mk(runs)
	mk(outside)
	good := `{"success":true}`
	write := func(p, s string) {
		mk(filepath.Dir(p))
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "report.json"), good)

	ok := NewRunID()
	write(filepath.Join(runs, ok, "report.json"), good)
	noReport := NewRunID()
	mk(filepath.Join(runs, noReport))
	linkedDir := NewRunID()
	if err := os.Symlink(outside, filepath.Join(runs, linkedDir)); err != nil {
		t.Fatal(err)
	}
	linkedReport := NewRunID()
	mk(filepath.Join(runs, linkedReport))
	if err := os.Symlink(filepath.Join(outside, "report.json"), filepath.Join(runs, linkedReport, "report.json")); err != nil {
		t.Fatal(err)
	}
	fileAsDir := NewRunID()
	write(filepath.Join(runs, fileAsDir), good)
	notObject := NewRunID()
	write(filepath.Join(runs, notObject, "report.json"), `[1]`)
	invalid := NewRunID()
	write(filepath.Join(runs, invalid, "report.json"), `{"a":`)
	dirReport := NewRunID()
	mk(filepath.Join(runs, dirReport, "report.json"))
	// pyjson's strict core refuses what encoding/json would have accepted:
	// the file is unusable exactly as one that is not JSON (fail closed).
	dupKey := NewRunID()
	write(filepath.Join(runs, dupKey, "report.json"), `{"success":false,"success":true}`)
	badUTF8 := NewRunID()
	write(filepath.Join(runs, badUTF8, "report.json"), "{\"success\":true,\"halt\":{\"reason\":\"\xff\"}}")
	loneSurrogate := NewRunID()
	write(filepath.Join(runs, loneSurrogate, "report.json"), `{"success":true,"started_at":"\ud800"}`)
	big := NewRunID()
	mk(filepath.Join(runs, big))
	f, _ := os.Create(filepath.Join(runs, big, "report.json"))
	_ = f.Truncate(MaxReportSize + 1)
	f.Close()

	tests := []struct {
		id    string
		state ReportState
		err   error
	}{
		{ok, ReportPresent, nil},
		{NewRunID(), ReportAbsent, nil},
		{noReport, ReportAbsent, nil},
		{linkedDir, ReportUnusable, ErrUnsafePath},
		{linkedReport, ReportUnusable, ErrUnsafePath},
		{fileAsDir, ReportUnusable, ErrUnsafePath},
		{notObject, ReportUnusable, ErrReportSyntax},
		{invalid, ReportUnusable, ErrReportSyntax},
		{dupKey, ReportUnusable, ErrReportSyntax},
		{badUTF8, ReportUnusable, ErrReportSyntax},
		{loneSurrogate, ReportUnusable, ErrReportSyntax},
		{dirReport, ReportUnusable, ErrUnsafePath},
		{big, ReportUnusable, ErrReportTooLarge},
		{"../outside", ReportUnusable, ErrInvalidRequest},
	}
	for _, tt := range tests {
		data, state, err := ReadReport(runs, tt.id)
		if state != tt.state || (tt.err == nil) != (err == nil) || (tt.err != nil && !errors.Is(err, tt.err)) {
			t.Errorf("ReadReport(%s) = %v, %v; want %v, %v", tt.id, state, err, tt.state, tt.err)
		}
		if state != ReportPresent && data != nil {
			t.Errorf("ReadReport(%s) returned data with state %v", tt.id, state)
		}
	}
	// A symlinked runs root is refused; a missing one has no report.
	link := filepath.Join(root, "runs-link")
	if err := os.Symlink(runs, link); err != nil {
		t.Fatal(err)
	}
	if _, state, err := ReadReport(link, ok); state != ReportUnusable || !errors.Is(err, ErrUnsafePath) {
		t.Errorf("symlinked root: %v %v", state, err)
	}
	if _, state, err := ReadReport(filepath.Join(root, "none"), ok); state != ReportAbsent || err != nil {
		t.Errorf("missing root: %v %v", state, err)
	}
	for _, s := range []ReportState{ReportAbsent, ReportUnusable, ReportPresent, 9} {
		if s.String() == "" {
			t.Errorf("empty String for %d", int(s))
		}
	}
}

func TestTail(t *testing.T) {
	var tl tail
	for i := 0; i < 10000; i++ {
		_, _ = tl.Write([]byte("é0123456789"))
	}
	s := tl.String()
	if n := utf8.RuneCountInString(s); n != TailChars || !utf8.ValidString(s) || !strings.HasSuffix(s, "é0123456789") {
		t.Errorf("tail: %d chars, valid %v", n, utf8.ValidString(s))
	}
	if cap(tl.buf) > 4*tailBytes {
		t.Errorf("tail buffer grew to %d bytes", cap(tl.buf))
	}
	var big tail
	_, _ = big.Write(bytes.Repeat([]byte("ü"), 3*tailBytes))
	if s := big.String(); utf8.RuneCountInString(s) != TailChars || !utf8.ValidString(s) {
		t.Errorf("one huge write: %d chars", utf8.RuneCountInString(s))
	}
	var small tail
	_, _ = small.Write([]byte("ok\n"))
	if small.String() != "ok\n" {
		t.Errorf("small = %q", small.String())
	}
	// A multi-byte character cut by the byte window is dropped, not mangled.
	if got := lastChars([]byte{0xa9, 'a', 'b'}, 10); got != "ab" {
		t.Errorf("lastChars = %q", got)
	}
}

// TestTailKeptBytes: a tail with a byte cap keeps exactly the last max
// bytes (from a character boundary), in bounded memory, and its String is
// still the TailChars tail.
func TestTailKeptBytes(t *testing.T) {
	tl := tail{max: 1000}
	var all []byte
	for i := 0; i < 5000; i++ {
		p := []byte(fmt.Sprintf("line %d é\n", i))
		all = append(all, p...)
		_, _ = tl.Write(p)
	}
	got := tl.Bytes()
	want := all[len(all)-1000:]
	for len(want) > 0 && !utf8.RuneStart(want[0]) {
		want = want[1:]
	}
	if !bytes.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	if cap(tl.buf) > 4*1000 {
		t.Errorf("tail buffer grew to %d bytes", cap(tl.buf))
	}
	if s := tl.String(); s != string(want) {
		t.Errorf("String of a capped tail: %q", s)
	}
	// A cut multi-byte character at the start is dropped.
	cut := tail{max: 2}
	_, _ = cut.Write([]byte("xüa")) // 'x' 0xc3 0xbc 'a': the window is 0xbc 'a'
	if b := cut.Bytes(); string(b) != "a" {
		t.Errorf("cut window = %q, want \"a\"", b)
	}
	var empty tail
	if b := empty.Bytes(); len(b) != 0 {
		t.Errorf("empty tail kept %q", b)
	}
}

func TestExecErrors(t *testing.T) {
	if ex := Exec(context.Background(), Command{}); !errors.Is(ex.Err, ErrEmptyCommand) || ex.Code != -1 {
		t.Errorf("empty: %+v", ex)
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "flow")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ex := Exec(context.Background(), Command{Args: []string{notExec}}); !errors.Is(ex.Err, ErrSpawn) || !errors.Is(ex.Err, fs.ErrPermission) {
		t.Errorf("not executable: %v", ex.Err)
	}
}

// TestExecEnvIsExplicit: a nil Env is empty, never the inherited one.
func TestExecEnvIsExplicit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("uses /usr/bin/env")
	}
	t.Setenv("FLOWRUN_SHOULD_NOT_LEAK", "1")
	ex := Exec(context.Background(), Command{Args: []string{"/usr/bin/env"}, Timeout: time.Minute})
	if ex.Err != nil || ex.Code != 0 {
		t.Fatalf("%+v", ex)
	}
	if ex.Stdout != "" {
		t.Errorf("child saw an environment: %q", ex.Stdout)
	}
}
