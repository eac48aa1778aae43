package serve

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDigestCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.demo("demo", testBundle{salt: "c1"})
	e.demo("other", testBundle{salt: "c2"})
	o := e.opts()
	o.AllowRun = true
	s1 := start(t, o)
	ids1 := toolNames(s1)
	// The cache lives in the per-user cache folder, 0700,
	// one 0600 file per bundles root; never in the runs folder.
	cache := s1.srv.runs.loader.cachePath(e.bundles)
	if filepath.Dir(cache) != o.CacheDir {
		t.Fatalf("cache path %s is not in %s", cache, o.CacheDir)
	}
	fi, err := os.Stat(cache)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache %v %v", fi, err)
	}
	if di, err := os.Stat(o.CacheDir); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("cache folder %v %v", di, err)
	}
	if _, err := os.Stat(filepath.Join(e.runsDir, ".openadapt-agent", cacheName)); err == nil {
		t.Fatal("a cache file was written into the runs folder")
	}
	// A warm start serves the same listing.
	s2 := start(t, o)
	if got := toolNames(s2); len(got) != len(ids1) {
		t.Fatalf("warm tools %v vs %v", got, ids1)
	}
	// Any change to a bundle's files is a miss: a tampered bundle becomes
	// unavailable at the next start.
	writeBundle(t, dir, testBundle{name: "Demo Triage", params: map[string]string{"note": "x"}, intents: []string{"a"}, salt: "c1", tamper: true})
	// A coarse file-system clock may give the rewrite the old mtime: make
	// the change visible to the fingerprint explicitly instead of waiting.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "workflow.json"), later, later); err != nil {
		t.Fatal(err)
	}
	s3 := start(t, o)
	if got := toolNames(s3); len(got) != len(ids1)-1 {
		t.Fatalf("after tamper: %v", got)
	}
	// A run never trusts the cache: it re-verifies the bundle in full.
	s4 := start(t, o)
	var w *workflow
	for _, x := range s4.srv.catalog.cat.workflows {
		if x.available {
			w = x
		}
	}
	{
		writeBundle(t, w.dir, testBundle{name: "Demo Triage", params: map[string]string{"note": "x"}, intents: []string{"a"}, salt: "zz"})
		if r := s4.call("run_"+w.id, map[string]any{"note": "a"}); errorCode(r) != "workflow_unavailable" {
			t.Fatalf("changed bundle ran: %v", r)
		}
	}
}

// TestReadOnlyWritesNoState: a read-only server started with the default
// runs folder creates nothing there and keeps no audit log; the cache still
// works, its key the one file in the per-user state folder; an unsafe
// cache folder is not used and not changed.
func TestReadOnlyWritesNoState(t *testing.T) {
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "r1"})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	o := e.opts()
	o.RunsDir = ""
	o.AuditLog = ""
	s := start(t, o)
	if len(toolNames(s)) == 0 {
		t.Fatal("no tools")
	}
	var made []string
	filepath.WalkDir(filepath.Join(home, "state"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			made = append(made, strings.TrimPrefix(filepath.ToSlash(p), filepath.ToSlash(home)))
		}
		return nil
	})
	if want := "/state/openadapt-agent/" + cacheKeyName; len(made) != 1 || made[0] != want {
		t.Fatalf("a read-only server wrote %v in the per-user state folder; want only %s", made, want)
	}
	if s.srv.prep.auditLog != nil {
		t.Fatal("a read-only server opened an audit log by default")
	}
	if want := filepath.Join(home, "state", "openadapt-agent", "runs"); s.srv.prep.runsDir != want {
		t.Fatalf("default runs dir %s, want %s", s.srv.prep.runsDir, want)
	}
	if !strings.Contains(s.srv.Banner(), "audit log off (read-only: no state is written)") {
		t.Fatalf("banner %q", s.srv.Banner())
	}
	if _, err := os.Stat(s.srv.runs.loader.cachePath(e.bundles)); err != nil {
		t.Fatalf("read-only server wrote no cache: %v", err)
	}

	// With --allow-run the default folder is created 0700.
	o.AllowRun = true
	s2 := start(t, o)
	if fi, err := os.Stat(s2.srv.prep.stateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("stateful server state dir %v %v", fi, err)
	}

	// A group-writable cache folder is neither used nor changed.
	bad := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(bad, 0o770); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(bad, 0o770); err != nil {
		t.Fatal(err)
	}
	o.AllowRun = false
	o.CacheDir = bad
	start(t, o)
	ents, _ := os.ReadDir(bad)
	if fi, _ := os.Stat(bad); len(ents) != 0 || fi.Mode().Perm() != 0o770 {
		t.Fatalf("unsafe cache folder used or changed: %d entries, mode %v", len(ents), fi.Mode())
	}
}

// A warm start takes a cached folder as a bundle without looking for its
// marker again only when the check has just seen the marker: a folder
// whose workflow.json is gone is no bundle at the next start, and
// markerSeen is false for anything but an unchanged entry listing one.
func TestWarmStartMarkerGone(t *testing.T) {
	setRacyWindow(t, -time.Hour) // cache what was just written (not parallel: a global)
	e := newEnv(t)
	dir := e.demo("demo", testBundle{salt: "m1"})
	e.demo("other", testBundle{salt: "m2"})
	o := e.opts()
	o.AllowRun = true
	served := func() int { return len(start(t, o).srv.catalog.cat.workflows) }
	if n := served(); n != 2 {
		t.Fatalf("cold start serves %d workflows", n)
	}
	if n := served(); n != 2 {
		t.Fatalf("warm start serves %d workflows", n)
	}
	if c, err := os.ReadFile(filepath.Join(o.CacheDir, filepath.Base(start(t, o).srv.runs.loader.cachePath(e.bundles)))); err != nil || !strings.Contains(string(c), "workflow.json") {
		t.Fatalf("the first start cached nothing: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "workflow.json")); err != nil {
		t.Fatal(err)
	}
	// Not a bundle any more: not served at all (not even as unavailable).
	if n := served(); n != 1 {
		t.Fatalf("after the marker was removed: %d workflows served, want 1", n)
	}

	var nilCache *rootCache
	rc := &rootCache{byDir: map[string]*cachedBundle{
		"/r/plain":   {Files: ".\nmanifest.json\nworkflow.json", unchanged: true},
		"/r/sealed":  {Files: ".\ntemplates\nworkflow.json.enc", unchanged: true},
		"/r/changed": {Files: ".\nworkflow.json"},
		"/r/none":    {Files: ".\ntemplates\ntemplates/workflow.json", unchanged: true},
	}}
	for dir, want := range map[string]bool{"/r/plain": true, "/r/sealed": true, "/r/changed": false, "/r/none": false, "/r/unknown": false} {
		if got := rc.markerSeen(dir); got != want {
			t.Errorf("markerSeen(%s) = %v, want %v", dir, got, want)
		}
	}
	if nilCache.markerSeen("/r/plain") {
		t.Error("a nil cache saw a marker")
	}
}
