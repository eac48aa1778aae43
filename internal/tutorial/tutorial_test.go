package tutorial

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	instance = "0123456789abcdef"
	digest   = "a2e6f6d7dc98c7ec859499f2bf07c7a5d741a553968d97a5a5c8bb524a2e411a"
)

// fakeHelper plays the helper's side of tutorial.prepare in process: it
// "prepares" by copying the real Flow-made tutorial bundle from testdata.
type fakeHelper struct {
	phases []string
	err    error
	edit   func(*Result)
	dead   bool
	got    Request
}

func (f *fakeHelper) PrepareTutorial(_ context.Context, req Request, progress func(string)) (Result, error) {
	f.got = req
	for _, p := range f.phases {
		progress(p)
	}
	if f.err != nil {
		return Result{}, f.err
	}
	bdir := filepath.Join(req.WorkDir, "bundle")
	if err := os.CopyFS(bdir, os.DirFS(filepath.Join("..", "..", "testdata", "tutorial", "bundle"))); err != nil && !errors.Is(err, os.ErrExist) {
		return Result{}, err
	}
	r := Result{BundleDir: bdir, BaseURL: "http://127.0.0.1:40395/", URL: "http://127.0.0.1:40395/" + EntryQuery,
		DeploymentConfig: filepath.Join(req.WorkDir, "deployment-"+req.Instance+".yaml"), ContentDigest: digest,
		Reused: req.Reuse}
	if err := os.WriteFile(r.DeploymentConfig, []byte("{}\n"), 0o600); err != nil {
		return Result{}, err
	}
	if f.edit != nil {
		f.edit(&r)
	}
	return r, nil
}

func (f *fakeHelper) Alive() bool { return !f.dead }

func dirs(t *testing.T) (runs, state string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runs, state = filepath.Join(root, "runs"), filepath.Join(root, "runs", ".openadapt-agent")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	return runs, state
}

func fixedClock() func() time.Time {
	t := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(1500 * time.Millisecond); return t }
}

func TestPrepareOK(t *testing.T) {
	runs, state := dirs(t)
	var out bytes.Buffer
	h := &fakeHelper{phases: []string{"lock", "mockmed", "verify", "replace", "record", "compile", "certify", "deployment"}}
	s, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: instance,
		Policy: "clinical-write", Progress: &out, Prefix: "serve: ", Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	work := filepath.Join(runs, DirName)
	if h.got != (Request{WorkDir: work, Reuse: true, Instance: instance, Policy: "clinical-write"}) {
		t.Errorf("request %+v", h.got)
	}
	if fi, err := os.Lstat(work); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("work dir %v %v", fi, err)
	}
	if s.ContentDigest != digest || s.BundleDir != filepath.Join(work, "bundle") || !s.Reused || !s.Alive() {
		t.Errorf("session %+v", s)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 11 {
		t.Fatalf("want one line per phase (8 helper + 2 Go + ready), got %d:\n%s", len(lines), out.String())
	}
	if lines[4] != "serve: synthetic tutorial: recording the synthetic demonstration in a browser (7.5 s)" {
		t.Errorf("line %q", lines[4])
	}
	if !strings.HasPrefix(lines[10], "serve: synthetic tutorial ready (reused) in ") {
		t.Errorf("last line %q", lines[10])
	}
	fi, err := os.Stat(StatePath(state, instance))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state record %v %v", fi, err)
	}
	if !s.Exempt(s.BundleDir) {
		t.Error("the prepared bundle must be exempt")
	}
	s.Close()
	for _, p := range []string{StatePath(state, instance), s.DeploymentConfig} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Close: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.BundleDir, "workflow.json")); err != nil {
		t.Error("Close must keep the bundle for reuse")
	}
	if s.Exempt(s.BundleDir) {
		t.Error("no state record: not exempt")
	}
}

func TestPrepareNoReuseAndUnknownPhase(t *testing.T) {
	runs, state := dirs(t)
	var out bytes.Buffer
	h := &fakeHelper{phases: []string{"lock", "surprise"}}
	s, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: instance, NoReuse: true, Progress: &out})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if h.got.Reuse || s.Reused || h.got.Policy != "" {
		t.Errorf("request %+v session reused %v", h.got, s.Reused)
	}
	if strings.Contains(out.String(), "surprise") || !strings.Contains(out.String(), "ready (prepared)") {
		t.Errorf("output %q", out.String())
	}
}

func TestPrepareFailsAtPhase(t *testing.T) {
	runs, state := dirs(t)
	var out bytes.Buffer
	secret := errors.New("Jane Roe MRN-9911 /private/protected/path")
	h := &fakeHelper{phases: []string{"lock", "mockmed", "record"}, err: secret}
	_, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: instance, Progress: &out})
	var te *Error
	if !errors.As(err, &te) || te.Phase != "record" || !errors.Is(err, secret) {
		t.Fatalf("err %v", err)
	}
	if err.Error() != "synthetic tutorial failed at record; see the protected local log" {
		t.Errorf("message %q", err.Error())
	}
	if strings.Contains(out.String(), "MRN") || strings.Contains(err.Error(), "MRN") {
		t.Error("helper error text leaked")
	}
	if _, err := os.Lstat(StatePath(state, instance)); !errors.Is(err, os.ErrNotExist) {
		t.Error("a failed preparation must record nothing")
	}
}

func TestPrepareRefusesBadResults(t *testing.T) {
	cases := []struct {
		name, phase string
		edit        func(*Result)
	}{
		{"bundle elsewhere", "deployment", func(r *Result) { r.BundleDir = "/elsewhere/bundle" }},
		{"other deployment", "deployment", func(r *Result) { r.DeploymentConfig += ".x" }},
		{"non-loopback", "deployment", func(r *Result) {
			r.BaseURL, r.URL = "http://10.0.0.1:8080/", "http://10.0.0.1:8080/"+EntryQuery
		}},
		{"other entry", "deployment", func(r *Result) { r.URL = r.BaseURL + "?fault=optimistic#tasks" }},
		{"bad digest", "deployment", func(r *Result) { r.ContentDigest = "sha256:" + digest }},
		{"digest differs", "bundle", func(r *Result) { r.ContentDigest = strings.Repeat("0", 64) }},
		{"tampered bundle", "bundle", func(r *Result) {
			p := filepath.Join(r.BundleDir, "workflow.json")
			raw, _ := os.ReadFile(p)
			_ = os.WriteFile(p, bytes.Replace(raw, []byte("Synthetic"), []byte("synthetic"), 1), 0o600)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runs, state := dirs(t)
			h := &fakeHelper{phases: []string{"lock", "deployment"}, edit: c.edit}
			_, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: instance})
			var te *Error
			if !errors.As(err, &te) || te.Phase != c.phase {
				t.Fatalf("err %v, want failure at %s", err, c.phase)
			}
		})
	}
}

func TestPrepareRefusesSymlinkedWorkDir(t *testing.T) {
	runs, state := dirs(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(runs, DirName)); err != nil {
		t.Fatal(err)
	}
	h := &fakeHelper{}
	_, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: instance})
	var te *Error
	if !errors.As(err, &te) || te.Phase != "lock" || h.got.WorkDir != "" {
		t.Fatalf("err %v, helper asked %+v", err, h.got)
	}
	if _, err := Prepare(context.Background(), h, Options{RunsDir: "rel", StateDir: state, Instance: instance}); err == nil {
		t.Fatal("relative runs dir accepted")
	}
	if _, err := Prepare(context.Background(), h, Options{RunsDir: runs, StateDir: state, Instance: "x"}); err == nil {
		t.Fatal("bad instance accepted")
	}
}

// TestExemptBoundToPreparedDigest: the exemption holds only for the prepared
// directory, only while the recorded digest matches a fresh verification.
func TestExemptBoundToPreparedDigest(t *testing.T) {
	runs, state := dirs(t)
	s, err := Prepare(context.Background(), &fakeHelper{}, Options{RunsDir: runs, StateDir: state, Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Exempt(s.BundleDir) || !s.Exempt(s.BundleDir+"/") {
		t.Fatal("prepared bundle not exempt")
	}
	// Another bundle, even a byte-identical copy, is not the prepared one.
	other := filepath.Join(runs, "copy")
	if err := os.CopyFS(other, os.DirFS(s.BundleDir)); err != nil {
		t.Fatal(err)
	}
	if s.Exempt(other) {
		t.Error("a copy elsewhere must not be exempt")
	}
	var nilSession *Session
	if nilSession.Exempt(s.BundleDir) {
		t.Error("nil session exempt")
	}
	rec := StatePath(state, instance)
	raw, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	// A record naming another digest.
	if err := os.WriteFile(rec, bytes.Replace(raw, []byte(digest), []byte(strings.Repeat("1", 64)), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Exempt(s.BundleDir) {
		t.Error("record with another digest: exempt")
	}
	// A symlinked record.
	target := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(target, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(rec)
	if err := os.Symlink(target, rec); err != nil {
		t.Fatal(err)
	}
	if s.Exempt(s.BundleDir) {
		t.Error("symlinked record: exempt")
	}
	os.Remove(rec)
	if err := os.WriteFile(rec, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if !s.Exempt(s.BundleDir) {
		t.Fatal("restored record: not exempt")
	}
	// The bundle changed after preparation: re-verified at the call.
	p := filepath.Join(s.BundleDir, "templates", "step_000.png")
	if err := os.WriteFile(p, []byte("not the template"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s.Exempt(s.BundleDir) {
		t.Error("tampered bundle exempt")
	}
}
