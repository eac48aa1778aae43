package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// vectors is the Flow vector folder, absolute because [Run] resolves
// relative paths against the fake working folder.
var vectors = func() string {
	a, err := filepath.Abs("../../testdata/flow")
	if err != nil {
		panic(err)
	}
	return a
}()

// fake is a test machine: a PATH of known programs, a home folder, an
// environment and a Flow version answer.
type fake struct {
	path    map[string]bool
	env     map[string]string
	home    string
	work    string
	exe     string
	tmp     string
	version string
	verErr  error
	calls   [][]string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	return &fake{
		path: map[string]bool{},
		env:  map[string]string{},
		home: t.TempDir(),
		work: t.TempDir(),
	}
}

func (f *fake) Env() Env {
	return Env{
		Getenv: func(k string) string { return f.env[k] },
		LookPath: func(name string) (string, error) {
			if f.path[name] {
				return "/fake/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
		HomeDir:        f.home,
		DefaultRunsDir: filepath.Join(f.home, ".local", "state", "openadapt-agent", "runs"),
		WorkDir:        f.work,
		Executable:     f.exe,
		TempDir:        f.tmp,
		Now:            func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) },
		FlowVersion: func(_ context.Context, argv []string) (string, error) {
			f.calls = append(f.calls, argv)
			return f.version, f.verErr
		},
	}
}

func find(t *testing.T, r *Report, id string) Check {
	t.Helper()
	for _, c := range r.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", id, r.Checks)
	return Check{}
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFlowCLI(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		onPath     bool
		version    string
		verErr     error
		wantStatus Status
		wantMsg    string
	}{
		{name: "found with version", onPath: true, version: "openadapt-flow 1.32.0\n", wantStatus: OK, wantMsg: "openadapt-flow 1.32.0 found"},
		{name: "newer", onPath: true, version: "1.40.2", wantStatus: OK, wantMsg: "openadapt-flow 1.40.2 found"},
		{name: "older", onPath: true, version: "openadapt-flow 1.20.1", wantStatus: Warn, wantMsg: "openadapt-flow 1.20.1 found; this agent expects 1.32.0 or later"},
		{name: "version fails", onPath: true, verErr: errors.New("exit 2"), wantStatus: Warn, wantMsg: "Flow command found, but `--version` did not report a version"},
		{name: "no version in output", onPath: true, version: "usage: openadapt-flow", wantStatus: Warn, wantMsg: "Flow command found, but `--version` did not report a version"},
		{name: "missing default", wantStatus: Warn, wantMsg: "openadapt-flow was not found on PATH: serve still starts and its read tools work; run tools, attended actions and the tutorial will fail with flow_not_found, and --authoring will not start"},
		{name: "missing explicit", opts: Options{FlowCLI: "my-flow --x", FlowCLISet: true}, wantStatus: Fail, wantMsg: "the --flow-cli command was not found: run tools, attended actions and the tutorial will fail with flow_not_found, and --authoring will not start"},
		{name: "unsplittable", opts: Options{FlowCLI: `python3 "-m`, FlowCLISet: true}, wantStatus: Fail, wantMsg: "the --flow-cli value cannot be split into words (unterminated quote, trailing backslash or empty)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			f.version, f.verErr = tt.version, tt.verErr
			name := "openadapt-flow"
			if tt.opts.FlowCLI != "" {
				name = strings.Fields(tt.opts.FlowCLI)[0]
			}
			f.path[name] = tt.onPath
			c := find(t, Run(context.Background(), f.Env(), tt.opts, "test"), IDFlowCLI)
			if c.Status != tt.wantStatus || c.Message != tt.wantMsg {
				t.Errorf("got %s %q, want %s %q", c.Status, c.Message, tt.wantStatus, tt.wantMsg)
			}
			if c.Status != OK && c.Fix == "" {
				t.Error("a problem without a fix")
			}
		})
	}
}

func TestFlowCLISplitsAndProbes(t *testing.T) {
	f := newFake(t)
	f.path["python3"] = true
	f.version = "1.32.0"
	Run(context.Background(), f.Env(), Options{FlowCLI: `python3 -m 'openadapt_flow'`, FlowCLISet: true}, "test")
	if diff := cmp.Diff([][]string{{"python3", "-m", "openadapt_flow"}}, f.calls); diff != "" {
		t.Errorf("FlowVersion argv (-want +got):\n%s", diff)
	}
}

func TestBundles(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	tests := []struct {
		name       string
		bundles    string
		key        string
		wantStatus Status
		wantPrefix string
		keyStatus  Status
		keyPrefix  string
	}{
		{name: "not given", wantStatus: Warn, wantPrefix: "no bundles folder given", keyStatus: OK, keyPrefix: "not checked"},
		{name: "missing folder", bundles: filepath.Join(empty, "nope"), wantStatus: Fail, wantPrefix: "the --bundles folder does not exist", keyStatus: OK, keyPrefix: "no sealed bundles"},
		{name: "empty folder", bundles: empty, wantStatus: Warn, wantPrefix: "no bundles found", keyStatus: OK, keyPrefix: "no sealed bundles"},
		{name: "plain", bundles: vectors + "/plain", wantStatus: OK, wantPrefix: "6 bundle(s): 6 verified", keyStatus: OK, keyPrefix: "no sealed bundles"},
		{name: "one bundle", bundles: vectors + "/plain/encounter-loop", wantStatus: OK, wantPrefix: "1 bundle(s): 1 verified", keyStatus: OK, keyPrefix: "no sealed bundles"},
		{name: "legacy", bundles: vectors + "/legacy", wantStatus: Warn, wantPrefix: "1 bundle(s): 0 verified, 1 legacy (unverified)", keyStatus: OK, keyPrefix: "no sealed bundles"},
		{name: "tampered", bundles: vectors + "/tampered", key: "test-passphrase", wantStatus: Fail, wantPrefix: "7 bundle(s): 1 verified, 6 failed: workflow_", keyStatus: Fail, keyPrefix: "OPENADAPT_BUNDLE_KEY is set (value not shown) but does not open 2 of 2"},
		{name: "sealed without key", bundles: vectors + "/sealed", wantStatus: Fail, wantPrefix: "1 bundle(s): 0 verified, 1 failed: workflow_", keyStatus: Fail, keyPrefix: "1 sealed bundle(s), but OPENADAPT_BUNDLE_KEY is not set"},
		{name: "sealed wrong key", bundles: vectors + "/sealed", key: "wrong", wantStatus: Fail, wantPrefix: "1 bundle(s): 0 verified, 1 failed: workflow_", keyStatus: Fail, keyPrefix: "OPENADAPT_BUNDLE_KEY is set (value not shown) but does not open 1 of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			if tt.key != "" {
				f.env["OPENADAPT_BUNDLE_KEY"] = tt.key
			}
			r := Run(context.Background(), f.Env(), Options{Bundles: tt.bundles}, "test")
			c := find(t, r, IDBundles)
			if c.Status != tt.wantStatus || !strings.HasPrefix(c.Message, tt.wantPrefix) {
				t.Errorf("bundles: got %s %q, want %s %q…", c.Status, c.Message, tt.wantStatus, tt.wantPrefix)
			}
			if c.Status != OK && c.Fix == "" {
				t.Error("bundles: a problem without a fix")
			}
			k := find(t, r, IDBundleKey)
			if k.Status != tt.keyStatus || !strings.HasPrefix(k.Message, tt.keyPrefix) {
				t.Errorf("bundle_key: got %s %q, want %s %q…", k.Status, k.Message, tt.keyStatus, tt.keyPrefix)
			}
			if k.Status != OK && k.Fix == "" {
				t.Error("bundle_key: a problem without a fix")
			}
		})
	}
}

// TestBundleKeyOpens covers the sealed-and-opened case on loaded bundles:
// verifying the sealed vector with its key end to end costs one scrypt per
// template, which is slow under -race (bundle's own tests cover it).
func TestBundleKeyOpens(t *testing.T) {
	f := newFake(t)
	f.env["OPENADAPT_BUNDLE_KEY"] = "k"
	bs := []*bundle.Bundle{
		{ID: "workflow_a", Integrity: bundle.Verified, Encrypted: true},
		{ID: "workflow_b", Integrity: bundle.Verified, Encrypted: true},
		{ID: "workflow_c", Integrity: bundle.Verified},
	}
	c := checkBundleKey(withDefaults(f.Env()), Options{Bundles: "x"}, bs)
	want := Check{ID: IDBundleKey, Status: OK, Message: "OPENADAPT_BUNDLE_KEY is set (value not shown) and opens 2 sealed bundle(s)"}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestBundlesRelativeToWorkDir resolves --bundles against the working folder.
func TestBundlesRelativeToWorkDir(t *testing.T) {
	f := newFake(t)
	f.work = vectors
	c := find(t, Run(context.Background(), f.Env(), Options{Bundles: "plain"}, "test"), IDBundles)
	if c.Status != OK {
		t.Fatalf("got %s %q", c.Status, c.Message)
	}
}

// TestBundlesCanceled: the bundle verification stops with doctor's context
// (SIGINT) and a canceled check never reports the bundles verified.
func TestBundlesCanceled(t *testing.T) {
	f := newFake(t)
	f.work = vectors
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := find(t, Run(ctx, f.Env(), Options{Bundles: "plain"}, "test"), IDBundles)
	if c.Status == OK {
		t.Fatalf("a canceled verification passed: %q", c.Message)
	}
}

func TestRunsDir(t *testing.T) {
	base := t.TempDir()
	existing := filepath.Join(base, "runs")
	if err := os.Mkdir(existing, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(existing, link); err != nil {
		t.Fatal(err)
	}
	badState := filepath.Join(base, "bad-state")
	if err := os.MkdirAll(badState, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(existing, filepath.Join(badState, ".openadapt-agent")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		opts       Options
		wantStatus Status
		wantMsg    string
	}{
		{name: "existing", opts: Options{RunsDir: existing, RunsDirSet: true}, wantStatus: OK, wantMsg: "the runs folder exists and is writable"},
		{name: "to be created", opts: Options{RunsDir: filepath.Join(base, "new", "runs"), RunsDirSet: true}, wantStatus: OK, wantMsg: "the runs folder does not exist yet; serve creates it (mode 0700)"},
		{name: "symlink", opts: Options{RunsDir: link, RunsDirSet: true}, wantStatus: Fail, wantMsg: "the runs folder is a symbolic link: serve refuses it"},
		{name: "file", opts: Options{RunsDir: file, RunsDirSet: true}, wantStatus: Fail, wantMsg: "the runs folder path exists but is not a folder"},
		{name: "under a file", opts: Options{RunsDir: filepath.Join(file, "runs"), RunsDirSet: true}, wantStatus: Fail, wantMsg: "the runs folder does not exist and cannot be created here"},
		{name: "state folder is a symlink", opts: Options{RunsDir: badState, RunsDirSet: true}, wantStatus: Fail, wantMsg: "the agent state folder .openadapt-agent inside the runs folder is not a real folder"},
		// serve's default is the per-user state folder: absolute, so it works
		// from any folder.
		{name: "default is the per-user state folder", wantStatus: OK, wantMsg: "the runs folder does not exist yet; serve creates it (mode 0700)"},
		{name: "explicit relative", opts: Options{RunsDir: "runs", RunsDirSet: true}, wantStatus: Warn, wantMsg: "the runs folder does not exist yet; serve creates it (mode 0700), but the path is relative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			c := find(t, Run(context.Background(), f.Env(), tt.opts, "test"), IDRunsDir)
			if c.Status != tt.wantStatus || c.Message != tt.wantMsg {
				t.Errorf("got %s %q, want %s %q", c.Status, c.Message, tt.wantStatus, tt.wantMsg)
			}
			if c.Status != OK && c.Fix == "" {
				t.Error("a problem without a fix")
			}
		})
	}
}

func TestRunsDirNotWritable(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("permission bits do not stop this user")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	f := newFake(t)
	c := find(t, Run(context.Background(), f.Env(), Options{RunsDir: dir, RunsDirSet: true}, "test"), IDRunsDir)
	if c.Status != Fail || c.Message != "the runs folder is not writable" {
		t.Errorf("got %s %q", c.Status, c.Message)
	}
}

func TestRunsDirRelativeFixSuggestsHome(t *testing.T) {
	f := newFake(t)
	c := find(t, Run(context.Background(), f.Env(), Options{RunsDir: "runs", RunsDirSet: true}, "test"), IDRunsDir)
	want := "pass an absolute --runs-dir (agents start servers in a working folder you do not control), for example --runs-dir " + filepath.Join(f.home, ".openadapt", "runs")
	if c.Fix != want {
		t.Errorf("fix = %q, want %q", c.Fix, want)
	}
}

func TestAgents(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		f := newFake(t)
		r := Run(context.Background(), f.Env(), Options{}, "test")
		c := find(t, r, IDAgents)
		if c.Status != Warn || c.Fix == "" {
			t.Errorf("got %+v", c)
		}
	})

	bundles := abs(t, vectors+"/plain")
	t.Run("claude code on PATH", func(t *testing.T) {
		f := newFake(t)
		f.path["claude"] = true
		f.exe = "/opt/openadapt agent/bin/openadapt-agent"
		r := Run(context.Background(), f.Env(), Options{Bundles: bundles, RunsDir: "/srv/runs", RunsDirSet: true}, "test")
		want := Check{
			ID:      "agent.claude-code",
			Status:  OK,
			Message: "Claude Code detected (claude on PATH)",
			Fix:     "claude mcp add --scope user openadapt-agent -- '/opt/openadapt agent/bin/openadapt-agent' serve --bundles " + bundles + " --runs-dir /srv/runs\n" + ModesNote,
		}
		if diff := cmp.Diff(want, find(t, r, "agent.claude-code")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		for _, c := range r.Checks {
			if c.ID == IDAgents {
				t.Error("agents warning although Claude Code was found")
			}
		}
	})
	t.Run("codex by config folder", func(t *testing.T) {
		f := newFake(t)
		if err := os.Mkdir(filepath.Join(f.home, ".codex"), 0o700); err != nil {
			t.Fatal(err)
		}
		f.tmp = "/tmp"
		f.exe = "/tmp/go-build123/b001/exe/openadapt-agent" // go run: not a lasting path
		f.path["openadapt-agent"] = true
		r := Run(context.Background(), f.Env(), Options{Bundles: bundles, FlowCLI: "python3 -m openadapt_flow", FlowCLISet: true, Ledger: "/srv/ledger.json"}, "test")
		want := Check{
			ID:      "agent.codex",
			Status:  OK,
			Message: "Codex detected (config folder ~/.codex)",
			Fix: `add to ~/.codex/config.toml (env_vars forwards the bundle key without storing it):
[mcp_servers.openadapt-agent]
command = "/fake/bin/openadapt-agent"
args = ["serve", "--bundles", "` + bundles + `", "--flow-cli", "python3 -m openadapt_flow", "--ledger", "/srv/ledger.json"]
env_vars = ["OPENADAPT_BUNDLE_KEY"]
` + ModesNote,
		}
		if diff := cmp.Diff(want, find(t, r, "agent.codex")); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("openadapt-agent not on PATH", func(t *testing.T) {
		f := newFake(t)
		f.path["claude"] = true
		f.exe = "/tmp/go-build1/exe/openadapt-agent"
		c := find(t, Run(context.Background(), f.Env(), Options{}, "test"), "agent.claude-code")
		if c.Status != Warn || !strings.HasSuffix(c.Message, "but this doctor is a temporary build (go run) and openadapt-agent is not on PATH, so there is no lasting program to register") {
			t.Errorf("got %s %q", c.Status, c.Message)
		}
		// Never the bare name: a host starts the server with its own PATH.
		if !strings.HasPrefix(c.Fix, InstallHint+" (or, in a clone, go build -o openadapt-agent ./cmd/openadapt-agent), then register its absolute path:\n") ||
			!strings.Contains(c.Fix, "\nclaude mcp add --scope user openadapt-agent -- /ABSOLUTE/PATH/TO/openadapt-agent serve ") {
			t.Errorf("fix = %q", c.Fix)
		}
	})
	t.Run("cursor", func(t *testing.T) {
		f := newFake(t)
		f.path["cursor-agent"] = true
		if err := os.Mkdir(filepath.Join(f.home, ".cursor"), 0o700); err != nil {
			t.Fatal(err)
		}
		f.exe = "/usr/local/bin/openadapt-agent"
		r := Run(context.Background(), f.Env(), Options{}, "test")
		c := find(t, r, "agent.cursor")
		if c.Message != "Cursor detected (cursor-agent on PATH, config folder ~/.cursor)" {
			t.Errorf("message = %q", c.Message)
		}
		head, body, _ := strings.Cut(strings.TrimSuffix(c.Fix, "\n"+ModesNote), "\n")
		if head != "add to ~/.cursor/mcp.json (merge into an existing mcpServers object):" {
			t.Errorf("fix head = %q", head)
		}
		var doc struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("snippet is not JSON: %v", err)
		}
		s := doc.MCPServers["openadapt-agent"]
		wantArgs := []string{"serve", "--bundles", "/ABSOLUTE/PATH/TO/bundles"}
		if s.Command != "/usr/local/bin/openadapt-agent" || !cmp.Equal(s.Args, wantArgs) ||
			!cmp.Equal(s.Env, map[string]string{"OPENADAPT_BUNDLE_KEY": "${env:OPENADAPT_BUNDLE_KEY}"}) {
			t.Errorf("snippet server = %+v", s)
		}
	})
	t.Run("gemini cli", func(t *testing.T) {
		f := newFake(t)
		if err := os.Mkdir(filepath.Join(f.home, ".gemini"), 0o700); err != nil {
			t.Fatal(err)
		}
		f.exe = "/usr/local/bin/openadapt-agent"
		c := find(t, Run(context.Background(), f.Env(), Options{Bundles: bundles}, "test"), "agent.gemini-cli")
		want := Check{ID: "agent.gemini-cli", Status: OK, Message: "Gemini CLI detected (config folder ~/.gemini)",
			Fix: "gemini mcp add --scope user openadapt-agent /usr/local/bin/openadapt-agent -e 'OPENADAPT_BUNDLE_KEY=$OPENADAPT_BUNDLE_KEY' -- serve --bundles " + bundles + "\n" + ModesNote}
		if diff := cmp.Diff(want, c); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("all four", func(t *testing.T) {
		f := newFake(t)
		f.path["claude"], f.path["codex"], f.path["cursor"], f.path["gemini"] = true, true, true, true
		r := Run(context.Background(), f.Env(), Options{}, "test")
		var ids []string
		for _, c := range r.Checks {
			if strings.HasPrefix(c.ID, "agent") {
				ids = append(ids, c.ID)
			}
		}
		if diff := cmp.Diff([]string{"agent.claude-code", "agent.codex", "agent.cursor", "agent.gemini-cli"}, ids); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/x":   "/usr/bin/x",
		"a b":          "'a b'",
		"it's":         `'it'\''s'`,
		"":             "''",
		"$HOME/x":      "'$HOME/x'",
		"C:/Users/x/y": "C:/Users/x/y",
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLedgerHook(t *testing.T) {
	f := newFake(t)
	env := f.Env()
	var gotPath string
	env.Ledger = func(_ context.Context, path string, now time.Time) Check {
		gotPath = path
		return Check{ID: IDLedger, Status: Warn, Message: "old", Fix: "refresh"}
	}
	r := Run(context.Background(), env, Options{Ledger: "ledgers/x.json"}, "test")
	if want := filepath.Join(f.work, "ledgers/x.json"); gotPath != want {
		t.Errorf("ledger path = %q, want %q", gotPath, want)
	}
	if c := find(t, r, IDLedger); c.Status != Warn {
		t.Errorf("ledger check = %+v", c)
	}
}

func TestReport(t *testing.T) {
	f := newFake(t)
	f.path["openadapt-flow"] = true
	f.version = "openadapt-flow 1.32.0"
	f.path["claude"] = true
	f.path["openadapt-agent"] = true
	r := Run(context.Background(), f.Env(), Options{Bundles: vectors + "/plain", RunsDir: filepath.Join(f.work, "runs"), RunsDirSet: true}, "9.9.9")
	if r.MediaType != "application/vnd.openadapt-agent.doctor+json;version=1" || r.Version != "9.9.9" {
		t.Errorf("header = %q %q", r.MediaType, r.Version)
	}
	var ids []string
	for _, c := range r.Checks {
		ids = append(ids, c.ID)
	}
	if diff := cmp.Diff([]string{"flow_cli", "bundles", "bundle_key", "runs_dir", "agent.claude-code"}, ids); diff != "" {
		t.Errorf("check order (-want +got):\n%s", diff)
	}
	if r.Failed() || r.Summary != (Summary{OK: 5}) {
		t.Errorf("summary = %+v", r.Summary)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(b, &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mediaType", "version", "summary", "checks"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, c := range generic["checks"].([]any) {
		for _, k := range []string{"id", "status", "message", "fix"} {
			if _, ok := c.(map[string]any)[k]; !ok {
				t.Errorf("check %v lacks %q", c, k)
			}
		}
	}
}

// TestNoProtectedData runs doctor over every bundle vector, with and without
// the key, and requires that no workflow name, parameter value or the key
// reaches the report.
func TestNoProtectedData(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(vectors + "/MANIFEST.json")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Passphrase string `json:"passphrase"`
		Vectors    []struct {
			Kind     string         `json:"kind"`
			Expected map[string]any `json:"expected"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range m.Vectors {
		if v.Kind != "bundle" {
			continue
		}
		if n, ok := v.Expected["name"].(string); ok && n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 || m.Passphrase == "" {
		t.Fatal("the vector MANIFEST has no names or passphrase to look for")
	}
	runs := []struct{ key, root string }{
		{"", "plain"}, {"", "sealed"}, {"", "tampered"}, {"", "legacy"}, {"", "compat"},
		// With the key the tampered sealed bundles are decrypted (and fail);
		// the intact sealed vector is left out only for speed under -race.
		{m.Passphrase, "plain"}, {m.Passphrase, "tampered"},
	}
	for _, run := range runs {
		key, root := run.key, run.root
		t.Run(root+"/key="+strconv.FormatBool(key != ""), func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.path["claude"], f.path["codex"], f.path["cursor"] = true, true, true
			if key != "" {
				f.env["OPENADAPT_BUNDLE_KEY"] = key
			}
			b, _ := json.Marshal(Run(context.Background(), f.Env(), Options{Bundles: vectors + "/" + root}, "test"))
			out := string(b)
			for _, n := range names {
				if strings.Contains(out, n) {
					t.Errorf("%s: the report contains the workflow name %q", root, n)
				}
			}
			if key != "" && strings.Contains(out, key) {
				t.Errorf("%s: the report contains the bundle key", root)
			}
		})
	}
}

// TestBundlesAdviseCatalogMode: above serve's threshold the bundles check
// warns, once, that this many workflows want --tool-mode catalog; at the
// threshold it stays ok.
func TestBundlesAdviseCatalogMode(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := os.DirFS(vectors + "/plain/encounter-loop")
	for i := range CatalogModeAdvisedAbove + 1 {
		if err := os.CopyFS(filepath.Join(root, fmt.Sprintf("b%04d", i)), src); err != nil {
			t.Fatal(err)
		}
	}
	f := newFake(t)
	c := find(t, Run(context.Background(), f.Env(), Options{Bundles: root}, "test"), IDBundles)
	if c.Status != Warn || strings.Count(c.Message+c.Fix, "--tool-mode catalog") != 2 || !strings.Contains(c.Fix, "add --tool-mode catalog to serve") {
		t.Fatalf("above the threshold: %s %q %q", c.Status, c.Message, c.Fix)
	}
	if err := os.RemoveAll(filepath.Join(root, "b0000")); err != nil {
		t.Fatal(err)
	}
	c = find(t, Run(context.Background(), f.Env(), Options{Bundles: root}, "test"), IDBundles)
	if c.Status != OK || strings.Contains(c.Message, "catalog") {
		t.Fatalf("at the threshold: %s %q", c.Status, c.Message)
	}
}
