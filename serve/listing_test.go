package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/sealtest"
)

// copyVector copies the bundle vector testdata/flow/<rel> to dst.
func copyVector(t *testing.T, rel, dst string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "flow", rel))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// countLoads counts full verifications until the test ends.
func countLoads(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	testOnlyLoadHook = func(string) { n.Add(1) }
	t.Cleanup(func() { testOnlyLoadHook = nil })
	return &n
}

type listed struct {
	available bool
	reason    bundle.Unavailable
}

// byDir maps each served workflow's folder name to its availability.
func byDir(s *session) map[string]listed {
	m := map[string]listed{}
	for _, w := range s.srv.catalog.cat.workflows {
		m[filepath.Base(w.dir)] = listed{w.available, w.reason}
	}
	return m
}

func wantListed(t *testing.T, s *session, want map[string]listed) {
	t.Helper()
	got := byDir(s)
	if len(got) != len(want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}

// TestListingVerifiesFully: a workflow is available
// only when its bundle fully verifies; a flipped or deleted asset and a
// symlinked bundle folder are unavailable with their reason; the ids are
// the ones full verification gives; the warm start verifies nothing; any
// change to a file the verification reads (content with the mtime put
// back, size, deletion, a bare touch) is verified again.
func TestListingVerifiesFully(t *testing.T) {
	e := newEnv(t)
	good := copyVector(t, "plain/mockmed-triage-v3", filepath.Join(e.bundles, "a-good"))
	copyVector(t, "tampered/template-byte-flipped", filepath.Join(e.bundles, "b-flipped"))
	copyVector(t, "tampered/asset-missing", filepath.Join(e.bundles, "c-missing"))
	outside := copyVector(t, "plain/floats-linear", filepath.Join(e.root, "outside"))
	if err := os.Symlink(outside, filepath.Join(e.bundles, "d-link")); err != nil {
		t.Fatal(err)
	}
	loads := countLoads(t)
	o := e.opts()
	// Racy: with every file changed "just now" nothing is cached, so the
	// next start verifies again (a change in the same clock tick could keep
	// every identity).
	setRacyWindow(t, time.Hour)
	start(t, o)
	start(t, o)
	if n := loads.Swap(0); n != 6 {
		t.Errorf("racy folders: %d full verifications over two starts, want 6", n)
	}
	setRacyWindow(t, 0)
	fresh := map[string]listed{
		"a-good":    {true, ""},
		"b-flipped": {false, bundle.IntegrityFailed},
		"c-missing": {false, bundle.IntegrityFailed},
		"d-link":    {false, bundle.UnsafePath},
	}
	s1 := start(t, o)
	wantListed(t, s1, fresh)
	if n := loads.Swap(0); n != 3 {
		t.Errorf("cold start: %d full verifications, want 3 (the link is refused unread)", n)
	}
	// The ids are exactly those of full verification (bundle verify).
	bs, err := bundle.Discover(e.bundles, bundle.WithLevel(bundle.Full), bundle.WithoutKey())
	if err != nil || len(bs) != len(s1.srv.catalog.cat.workflows) {
		t.Fatalf("discover: %v %d", err, len(bs))
	}
	for i, b := range bs {
		if w := s1.srv.catalog.cat.workflows[i]; w.id != b.ID || filepath.Base(w.dir) != filepath.Base(b.Dir) {
			t.Errorf("workflow %d: %s %s, bundle verify gives %s %s", i, w.id, w.dir, b.ID, b.Dir)
		}
	}

	s2 := start(t, o)
	wantListed(t, s2, fresh)
	if n := loads.Swap(0); n != 0 {
		t.Errorf("warm start: %d full verifications, want 0", n)
	}
	for i, w := range s2.srv.catalog.cat.workflows {
		if w.id != bs[i].ID {
			t.Errorf("warm id %d: %s, want %s", i, w.id, bs[i].ID)
		}
	}

	tmpl := filepath.Join(good, "templates", "step_000.png")
	orig, err := os.ReadFile(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(tmpl)
	restore := func() {
		t.Helper()
		if err := os.WriteFile(tmpl, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmpl, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		s := start(t, o)
		wantListed(t, s, fresh)
		loads.Store(0)
	}
	broken := map[string]listed{"a-good": {false, bundle.IntegrityFailed}}
	for k, v := range fresh {
		if k != "a-good" {
			broken[k] = v
		}
	}
	for _, tc := range []struct {
		name   string
		change func()
		want   map[string]listed
	}{
		{"byte flipped, same size, mtime put back (ctime differs)", func() {
			b := append([]byte(nil), orig...)
			b[len(b)/2] ^= 1
			if err := os.WriteFile(tmpl, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(tmpl, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}, broken},
		{"size changed", func() {
			if err := os.WriteFile(tmpl, append(append([]byte(nil), orig...), 0), 0o644); err != nil {
				t.Fatal(err)
			}
		}, broken},
		{"deleted", func() {
			if err := os.Remove(tmpl); err != nil {
				t.Fatal(err)
			}
		}, broken},
		{"touched only", func() {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(tmpl, later, later); err != nil {
				t.Fatal(err)
			}
		}, fresh},
	} {
		tc.change()
		s := start(t, o)
		wantListed(t, s, tc.want)
		if n := loads.Load(); n != 1 {
			t.Errorf("%s: %d full verifications, want 1", tc.name, n)
		}
		restore()
	}
}

// TestSealedListingCache: a sealed bundle is listed
// at full verification (every template decrypted); the warm start reuses
// the result only under the same key (one key check, no bundle work); an
// unlisted templates/**/*.enc added after caching is verified again and
// makes the workflow unavailable.
func TestSealedListingCache(t *testing.T) {
	e := newEnv(t)
	const pass = "test-passphrase"
	dir := filepath.Join(e.bundles, "sealed")
	sealtest.Seal(t, filepath.Join("..", "testdata", "flow", "plain", "mockmed-triage-v3"), dir, pass)
	testOnlyKeyCheckN = sealtest.N
	t.Cleanup(func() { testOnlyKeyCheckN = 0 })
	setRacyWindow(t, 0)
	loads := countLoads(t)
	withKey := func(key string) Options {
		o := e.opts()
		if key != "" {
			o.Environ = append(o.Environ, bundle.KeyEnv+"="+key)
		}
		return o
	}
	step := func(name, key string, wantLoads int64, want listed) {
		t.Helper()
		s := start(t, withKey(key))
		wantListed(t, s, map[string]listed{"sealed": want})
		if n := loads.Swap(0); n != wantLoads {
			t.Errorf("%s: %d full verifications, want %d", name, n, wantLoads)
		}
	}
	step("cold", pass, 1, listed{true, ""})
	step("warm, same key", pass, 0, listed{true, ""})
	step("wrong key", "not the key", 1, listed{false, bundle.DecryptFailed})
	step("no key", "", 1, listed{false, bundle.MissingKey})
	step("no key, warm", "", 0, listed{false, bundle.MissingKey})
	step("key again", pass, 1, listed{true, ""})
	if err := os.WriteFile(filepath.Join(dir, "templates", "extra.png.enc"), []byte(`{"format":"openadapt-flow-enc"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	step("unlisted template added", pass, 1, listed{false, bundle.DecryptFailed})
}

// TestUnavailableReasons: every
// unavailable workflow carries bundle's reason code in list_workflows,
// search_workflows and get_workflow (validated against the outputSchemas by
// the harness); an available one carries none; stderr names the same code.
func TestUnavailableReasons(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	copyVector(t, "plain/mockmed-triage-v3", filepath.Join(e.bundles, "a-good"))
	copyVector(t, "tampered/workflow-edited", filepath.Join(e.bundles, "b-edited"))
	copyVector(t, "plain/unicode-params", filepath.Join(e.bundles, "c-unicode"))
	copyVector(t, "legacy/showcase-v1-no-manifest", filepath.Join(e.bundles, "d-legacy"))
	copyVector(t, "sealed/mockmed-triage-v3", filepath.Join(e.bundles, "e-sealed"))
	e.demo("f-reserved", testBundle{params: map[string]string{"url": "x", "note": "y"}, salt: "res"})
	e.demo("i-collision", testBundle{params: map[string]string{"a b": "x", "a_b_c8687a": "y"}, salt: "col"})
	if err := os.Symlink(filepath.Join(e.bundles, "a-good"), filepath.Join(e.bundles, "g-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.bundles, "h-notjson"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.bundles, "h-notjson", "workflow.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]bundle.Unavailable{
		"a-good": "", "b-edited": bundle.IntegrityFailed, "c-unicode": "", "i-collision": bundle.ParameterAliasCollision,
		"d-legacy": bundle.LegacyUnverifiedReason, "e-sealed": bundle.MissingKey, "f-reserved": bundle.ReservedParameterName,
		"g-link": bundle.UnsafePath, "h-notjson": bundle.InvalidBundle,
	}
	for _, mode := range []string{"per-workflow", "catalog"} {
		o := e.opts()
		o.ToolMode = mode
		s := start(t, o)
		dirOf := map[string]string{}
		for _, w := range s.srv.catalog.cat.workflows {
			dirOf[w.id] = filepath.Base(w.dir)
		}
		listTool := "list_workflows"
		if mode == "catalog" {
			listTool = "search_workflows"
		}
		res := s.call(listTool, map[string]any{})
		ws, _ := res["workflows"].([]any)
		if len(ws) != len(want) {
			t.Fatalf("%s: %d workflows, want %d", mode, len(ws), len(want))
		}
		for _, x := range ws {
			w := x.(map[string]any)
			id, _ := w["id"].(string)
			wantReason := want[dirOf[id]]
			got, has := w["unavailable_reason"]
			if wantReason == "" {
				if has || w["available"] != true {
					t.Errorf("%s %s: %v", mode, dirOf[id], w)
				}
				continue
			}
			if got != string(wantReason) || w["available"] != false {
				t.Errorf("%s %s: reason %v, want %s", mode, dirOf[id], got, wantReason)
			}
			g := s.call("get_workflow", map[string]any{"workflow": id})
			if g["unavailable_reason"] != string(wantReason) {
				t.Errorf("%s get_workflow %s: reason %v, want %s", mode, dirOf[id], g["unavailable_reason"], wantReason)
			}
			if !strings.Contains(s.stderr.String(), "serve: workflow "+id+" could not be loaded ("+string(wantReason)+")\n") {
				t.Errorf("%s: stderr lacks %s's reason: %s", mode, dirOf[id], s.stderr.String())
			}
		}
	}
}

// TestLabels: --labels adds the
// operator's label and description to list/search/get (omitted when not
// set), search matches them, an id that no served workflow has is counted
// on stderr, and every bad file stops the server (exit 2) naming the file
// and the entry's pointer but never its text.
func TestLabels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("a", testBundle{salt: "l1"})
	e.demo("b", testBundle{salt: "l2"})
	probe := start(t, e.opts())
	idA, idB := probe.srv.catalog.cat.workflows[0].id, probe.srv.catalog.cat.workflows[1].id
	write := func(name, body string) string {
		p := filepath.Join(e.root, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mt = `"mediaType":"application/vnd.openadapt.agent.labels+json;version=1"`
	const unknown = "workflow_ffffffffffffffffffffffff"
	good := write("labels.json", `{`+mt+`,"workflows":{"`+idA+`":{"label":"Triage a referral","description":"Files one inbound referral in MockMed."},"`+idB+`":{"label":"","description":""},"`+unknown+`":{"label":"gone"}}}`)
	for _, mode := range []string{"per-workflow", "catalog"} {
		o := e.opts()
		o.ToolMode, o.Labels = mode, good
		s := start(t, o)
		if !strings.Contains(s.stderr.String(), "serve: warning: 1 workflow id(s) in the --labels file match no served workflow\n") {
			t.Errorf("%s: no unknown-id warning: %q", mode, s.stderr.String())
		}
		tool := "list_workflows"
		if mode == "catalog" {
			tool = "search_workflows"
		}
		ws := s.call(tool, map[string]any{})["workflows"].([]any)
		a, b := ws[0].(map[string]any), ws[1].(map[string]any)
		if a["label"] != "Triage a referral" || a["description"] != "Files one inbound referral in MockMed." {
			t.Errorf("%s: labelled workflow %v", mode, a)
		}
		if _, has := b["label"]; has {
			t.Errorf("%s: empty label shown: %v", mode, b)
		}
		if _, has := b["description"]; has {
			t.Errorf("%s: empty description shown: %v", mode, b)
		}
		g := s.call("get_workflow", map[string]any{"workflow": idA})
		if g["label"] != "Triage a referral" {
			t.Errorf("%s: get_workflow %v", mode, g)
		}
		if mode == "catalog" {
			for q, want := range map[string]int{"triage": 1, "REFERRAL mockmed": 1, "triage nothing": 0, "gone": 0} {
				r := s.call("search_workflows", map[string]any{"query": q})
				if n := int(r["total_matches"].(float64)); n != want {
					t.Errorf("search %q: %d matches, want %d", q, n, want)
				}
			}
		}
	}

	const secret = "Jane Roe MRN-9911"
	big := write("big.json", `{`+mt+`,"workflows":{}}`+strings.Repeat(" ", 64<<10))
	fifo := filepath.Join(e.root, "labels.fifo")
	fifoOK := mkfifoTest(fifo) == nil
	for name, tc := range map[string]struct{ path, want string }{
		"bidi":           {write("bidi.json", `{`+mt+`,"workflows":{"`+idA+`":{"label":"`+secret+"\u202e"+`"}}}`), "/workflows/" + idA + "/label: contains a bidirectional control (U+202E)"},
		"control":        {write("ctl.json", `{`+mt+`,"workflows":{"`+idA+`":{"description":"`+secret+`\u0007"}}}`), "/workflows/" + idA + "/description: contains a control character (U+0007)"},
		"oversize label": {write("long.json", `{`+mt+`,"workflows":{"`+idA+`":{"label":"`+secret+strings.Repeat("x", 60)+`"}}}`), "/workflows/" + idA + "/label: 77 code points, at most 64 allowed"},
		"duplicate key":  {write("dup.json", `{`+mt+`,"workflows":{"`+idA+`":{},"`+idA+`":{"label":"`+secret+`"}}}`), "not strict JSON (duplicate key"},
		"media type":     {write("mt.json", `{"mediaType":"application/json","workflows":{}}`), "/mediaType: must be"},
		"bad id":         {write("id.json", `{`+mt+`,"workflows":{"`+secret+`":{}}}`), "/workflows: member 1: key is not a workflow id"},
		"oversize file":  {big, "the --labels file is larger than 64 KiB: " + big},
		"missing":        {filepath.Join(e.root, "nope.json"), "the --labels file does not exist: "},
		"fifo":           {fifo, "the --labels file is not a regular file: " + fifo},
	} {
		if name == "fifo" && !fifoOK {
			continue
		}
		o := e.opts()
		o.Labels = tc.path
		_, err := New(o, &syncBuffer{})
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("%s: %v, want a ConfigError containing %q", name, err, tc.want)
			continue
		}
		if !strings.Contains(ce.Msg, tc.path) {
			t.Errorf("%s: error does not name the file: %s", name, ce.Msg)
		}
		for _, tok := range []string{"Jane", "MRN", "\u202e"} {
			if strings.Contains(ce.Msg, tok) {
				t.Errorf("%s: error echoes the file's text: %q", name, ce.Msg)
			}
		}
	}
}

// TestBundleRoots: every --bundles
// root is served in order with duplicate suffixes across the whole server;
// a root given twice (also through a link) or nested in another is refused
// naming both; a root of skill folders serves each skill's bundle/ (a
// linked bundle/ is unsafe_path); a root of links or of nothing warns once
// with the fix.
func TestBundleRoots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.bundles
	e.demo("x", testBundle{salt: "r1"})
	e.demo("y", testBundle{salt: "r2"})
	b := filepath.Join(e.root, "skills")
	writeBundle(t, filepath.Join(b, "dup-skill", "bundle"), testBundle{name: "Demo Triage", params: map[string]string{"note": "Follow-up in 2 weeks"}, intents: []string{"Open the patient chart", "type note"}, salt: "r1"})
	for _, sk := range []string{"dup-skill", "linked-skill", "no-bundle"} {
		if err := os.MkdirAll(filepath.Join(b, sk), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b, sk, "SKILL.md"), []byte("---\nname: "+sk+"\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(a, "y"), filepath.Join(b, "linked-skill", "bundle")); err != nil {
		t.Fatal(err)
	}
	// A folder with bundle/ but no SKILL.md is not a skill folder.
	writeBundle(t, filepath.Join(b, "not-a-skill", "bundle"), testBundle{name: "N", salt: "r3"})

	o := e.opts()
	o.BundleRoots = []string{a, b}
	s := start(t, o)
	var got []string
	for _, w := range s.srv.catalog.cat.workflows {
		rel, _ := filepath.Rel(e.root, w.dir)
		got = append(got, rel+" "+w.id+" "+string(w.reason))
	}
	ws := s.srv.catalog.cat.workflows
	if len(ws) != 4 {
		t.Fatalf("served %v", got)
	}
	wantDirs := []string{"bundles/x", "bundles/y", "skills/dup-skill/bundle", "skills/linked-skill/bundle"}
	for i, w := range ws {
		if rel, _ := filepath.Rel(e.root, w.dir); rel != wantDirs[i] {
			t.Fatalf("order %v, want %v", got, wantDirs)
		}
	}
	if ws[2].baseID != ws[0].baseID || ws[2].id != ws[0].id+"_2" || !ws[2].available {
		t.Errorf("the second root's duplicate is not suffixed _2 after the first root: %v", got)
	}
	if ws[3].available || ws[3].reason != bundle.UnsafePath {
		t.Errorf("a linked skill bundle/ is served: %v", got)
	}
	// The same order and suffixes on the warm start.
	s2 := start(t, o)
	for i, w := range s2.srv.catalog.cat.workflows {
		if w.id != ws[i].id {
			t.Errorf("warm id %d: %s, want %s", i, w.id, ws[i].id)
		}
	}

	link := filepath.Join(e.root, "bundles-link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		roots []string
		want  string
	}{
		"twice":         {[]string{a, b, a}, "--bundles " + a + " and --bundles " + a + " are the same folder"},
		"through link":  {[]string{a, link}, "--bundles " + a + " and --bundles " + link + " are the same folder"},
		"nested":        {[]string{b, filepath.Join(b, "dup-skill")}, "--bundles " + filepath.Join(b, "dup-skill") + " is inside --bundles " + b},
		"nested, outer": {[]string{filepath.Join(a, "x"), a}, "--bundles " + filepath.Join(a, "x") + " is inside --bundles " + a},
		"missing":       {[]string{a, filepath.Join(e.root, "nope")}, "bundles directory does not exist: " + filepath.Join(e.root, "nope")},
	} {
		o := e.opts()
		o.BundleRoots = tc.roots
		_, err := New(o, &syncBuffer{})
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}

	// A root of links only (.claude/skills) and an empty root: one warning each.
	links := filepath.Join(e.root, "claude-skills")
	empty := filepath.Join(e.root, "empty")
	for _, d := range []string{links, empty} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(b, "dup-skill"), filepath.Join(links, "dup-skill")); err != nil {
		t.Fatal(err)
	}
	o = e.opts()
	o.BundleRoots = []string{a, links, empty}
	s3 := start(t, o)
	errText := s3.stderr.String()
	for _, want := range []string{
		"serve: warning: --bundles root 2 holds only links (1), which are never followed; serve the folder that holds the real copies, e.g. ~/.agents/skills, where skill install puts them\n",
		"serve: warning: --bundles root 3 holds no bundle; point it at",
	} {
		if strings.Count(errText, want) != 1 {
			t.Errorf("stderr lacks %q once:\n%s", want, errText)
		}
	}
	if strings.Contains(errText, "root 1 ") {
		t.Errorf("a root with bundles warned: %s", errText)
	}
	if strings.Contains(errText, e.root) {
		t.Errorf("a warning names a path: %s", errText)
	}
}

// setRacyWindow sets the digest cache's racy window for the rest of the test.
func setRacyWindow(t testing.TB, d time.Duration) {
	testOnlyRacyWindow = &d
	t.Cleanup(func() { testOnlyRacyWindow = nil })
}
