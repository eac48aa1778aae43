package serve

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
)

// bundleLoader loads the server's bundles: every --bundles root at
// startup, with the verified-digest cache (cache.go), and one bundle again
// at each run. The passphrase of sealed bundles comes from the server's
// environment, never from anything a caller sends.
type bundleLoader struct {
	roots    []string
	key      string // OPENADAPT_BUNDLE_KEY, "" for none
	cacheDir string // "" when the cache is off
	export   bool   // protected export: load errors go to stderr; no cache
	labels   *labels.Labels
	stderr   io.Writer

	// The digest cache's readiness and key (cache.go), once per start.
	cacheOnce sync.Once
	cacheKey  []byte
}

func newBundleLoader(o Options, prep *prepared, stderr io.Writer) *bundleLoader {
	return &bundleLoader{roots: o.roots(), key: flowrun.EnvValue(o.Environ, bundle.KeyEnv), cacheDir: prep.cacheDir,
		export: o.AllowProtectedExport, labels: prep.labels, stderr: stderr}
}

// discover loads the bundles of every --bundles root fail-soft
// (docs/mcp.md "Startup") and returns the workflows in discovery order (roots in the
// order given, each root in bundle discovery order) plus the number that
// are unavailable. Listing verifies each bundle FULLY (content digest and
// every listed asset), so a workflow is available only if
// a run would accept it and its id is the one `bundle verify` prints; the
// verified-digest cache (cache.go) skips the work for folders that did not
// change. Plaintext bundles load in parallel; sealed ones one at a time,
// one key derivation at a time (a key derivation is memory-hard). Duplicate
// ids get "_2", "_3", … across the whole server in that order. A run
// re-verifies its own bundle in full ([bundleLoader.verifyForRun]).
func (s *bundleLoader) discover() ([]*workflow, int) {
	type slot struct {
		dir    string
		sealed bool
		rc     *rootCache
		cb     *cachedBundle // the cache's entry, if any
		w      *workflow
		loaded bool
		pre    snapshot // folder identity taken before a fresh load
	}
	var slots []*slot
	var caches []*rootCache
	var roots []string
	for n, r := range s.roots {
		root, err := filepath.Abs(r)
		if err != nil {
			root = r
		}
		// The cache is read and every entry's folder identity checked (the
		// per-file stat, on every core) before the root is listed: a
		// folder whose check just stat'ed its marker needs no second look
		// for it (one lstat fewer per cached bundle). An entry is used only
		// for a folder the listing then offers as a candidate.
		rc := s.openRootCache(root)
		rc.checkAll()
		cands, err := rootCandidates(root, rc.markerSeen)
		if err != nil {
			fmt.Fprintln(s.stderr, "serve: a bundles directory could not be read; its workflows are not served")
			continue
		}
		s.warnEmptyRoot(n+1, cands)
		roots, caches = append(roots, root), append(caches, rc)
		for _, c := range cands {
			sl := &slot{dir: c.Dir, rc: rc}
			if c.Symlink {
				sl.w = fromBundle(bundle.RefusedSymlink(c.Dir))
			} else if sl.cb = rc.entry(c.Dir); sl.cb != nil && (!sl.cb.unchanged || sl.cb.Sealed && !rc.keyMatches()) {
				sl.cb = nil // changed, or sealed under another key (one key check per root)
			}
			slots = append(slots, sl)
		}
	}
	// Load the misses: plaintext on every core, sealed one at a time.
	var plain, sealed []*slot
	for _, sl := range slots {
		switch {
		case sl.w != nil:
		case sl.cb != nil:
			sl.w = sl.rc.hit(sl.cb, sl.dir)
		default:
			_, err := os.Lstat(filepath.Join(sl.dir, "workflow.json.enc"))
			if sl.sealed = err == nil; sl.sealed {
				sealed = append(sealed, sl)
			} else {
				plain = append(plain, sl)
			}
		}
	}
	load := func(sl *slot) {
		if testOnlyLoadHook != nil {
			testOnlyLoadHook(sl.dir)
		}
		// The identity is taken BEFORE the load: any change after it, during
		// the load or later, changes the identity the next start compares.
		pre, ok := takeSnapshot(sl.dir)
		sl.loaded = true
		b, err := bundle.Load(sl.dir, s.bundleOpts(bundle.Full, bundle.WithWorkers(1))...)
		if b == nil {
			b = &bundle.Bundle{Dir: sl.dir, Integrity: bundle.Failed, ErrorKind: bundle.KindUnreadable, Err: err}
			b.ID, b.BaseID = unloadableID(), unloadableID()
		}
		sl.w = fromBundle(b)
		if sl.w.available {
			s.readCard(sl.w, b)
		}
		if ok {
			sl.pre = pre
		}
	}
	parallel(plain, load)
	for _, sl := range sealed {
		load(sl)
	}
	// A cached bundle's card is read only when its folder holds one.
	var carded []*slot
	for _, sl := range slots {
		if sl.cb != nil && sl.w.available && listsCard(sl.cb.Files) {
			carded = append(carded, sl)
		}
	}
	parallel(carded, func(sl *slot) { s.readCard(sl.w, nil) })
	for _, sl := range slots {
		if sl.loaded {
			sl.rc.record(sl.w, sl.sealed, sl.pre)
		}
	}
	for i, rc := range caches {
		rc.store(roots[i])
	}

	ws := make([]*workflow, len(slots))
	bases := make([]string, len(slots))
	for i, sl := range slots {
		ws[i], bases[i] = sl.w, sl.w.baseID
	}
	for i, id := range bundle.SuffixIDs(bases) {
		ws[i].id = id
	}
	if l := s.labels; l != nil {
		served := make(map[string]bool, len(ws))
		for _, w := range ws {
			served[w.id] = true
		}
		// Ids are opaque: the count is enough to act on (never label text).
		if n := l.Unknown(func(id string) bool { return served[id] }); n > 0 {
			fmt.Fprintf(s.stderr, "serve: warning: %d workflow id(s) in the --labels file match no served workflow\n", n)
		}
	}
	s.settleCards(ws)
	failed := 0
	for _, w := range ws {
		if !w.available {
			failed++
			if s.export && w.loadErr != nil {
				fmt.Fprintf(s.stderr, "serve: workflow %s could not be loaded (%s): %s\n", w.id, w.reason, oneLine(*w.loadErr))
			} else {
				fmt.Fprintf(s.stderr, "serve: workflow %s could not be loaded (%s)\n", w.id, w.reason)
			}
		}
	}
	return ws, failed
}

// parallel runs f over xs on every core.
func parallel[T any](xs []T, f func(T)) {
	next := make(chan T)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(xs)) {
		wg.Go(func() {
			for x := range next {
				f(x)
			}
		})
	}
	for _, x := range xs {
		next <- x
	}
	close(next)
	wg.Wait()
}

// testOnlyLoadHook, when set by a test, is called before each full load.
var testOnlyLoadHook func(dir string)

// rootCandidates are bundle's discovery candidates of root plus, for a
// root of skill folders, each <root>/<skill>/bundle of a
// real (not linked) child folder that holds a regular SKILL.md: the bundle
// folder itself, refused as unsafe_path when it is a link. All in byte
// order of the child names. Links in the root (.claude/skills/<name> points
// into ~/.agents/skills) are refused as bundle discovery refuses them,
// never followed.
func rootCandidates(root string, marked func(dir string) bool) ([]bundle.Candidate, error) {
	cands, err := bundle.CandidatesKnown(root, marked)
	if err != nil || (len(cands) == 1 && cands[0].Dir == root) {
		return cands, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return cands, nil
	}
	have := make(map[string]bundle.Candidate, len(cands))
	for _, c := range cands {
		have[c.Dir] = c
	}
	out := make([]bundle.Candidate, 0, len(cands))
	for _, e := range ents {
		child := filepath.Join(root, e.Name())
		if c, ok := have[child]; ok {
			out = append(out, c)
			continue
		}
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(child, "SKILL.md")); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b := filepath.Join(child, "bundle")
		fi, err := os.Lstat(b)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			out = append(out, bundle.Candidate{Dir: b, Symlink: true})
		case fi.IsDir():
			if sub, err := bundle.Candidates(b); err == nil && len(sub) == 1 && sub[0].Dir == b {
				out = append(out, sub[0])
			}
		}
	}
	return out, nil
}

// warnEmptyRoot prints the one warning of a root that serves no bundle
// folder, with the likely fix. The root is named by position (stderr
// carries no paths by default).
func (s *bundleLoader) warnEmptyRoot(n int, cands []bundle.Candidate) {
	links := 0
	for _, c := range cands {
		if !c.Symlink {
			return
		}
		links++
	}
	which := "--bundles"
	if len(s.roots) > 1 {
		which = fmt.Sprintf("--bundles root %d", n)
	}
	if links > 0 {
		fmt.Fprintf(s.stderr, "serve: warning: %s holds only links (%d), which are never followed; serve the folder that holds the real copies, e.g. ~/.agents/skills, where skill install puts them\n", which, links)
		return
	}
	fmt.Fprintf(s.stderr, "serve: warning: %s holds no bundle; point it at a bundle folder (with workflow.json or workflow.json.enc), a folder of bundle folders, or a folder of skill folders with bundle/ inside, such as ~/.agents/skills, where skill install puts the real copies\n", which)
}

// unloadableID is the id of a bundle with no marker (docs/bundle.md), for
// a candidate that vanished before it could be loaded.
func unloadableID() string { return bundle.RefusedSymlink("").BaseID }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// bundleOpts are the load options: the key comes from the server's
// environment, never from anything a caller sends.
func (s *bundleLoader) bundleOpts(level bundle.Level, more ...bundle.Option) []bundle.Option {
	opts := []bundle.Option{bundle.WithLevel(level)}
	if s.key != "" {
		opts = append(opts, bundle.WithKey(s.key))
	} else {
		opts = append(opts, bundle.WithoutKey())
	}
	return append(opts, more...)
}

// fromBundle builds the server's view of one fully verified (or failed)
// bundle. Availability and its reason code are bundle's one rule.
func fromBundle(b *bundle.Bundle) *workflow {
	dir, err := filepath.Abs(b.Dir)
	if err != nil {
		dir = b.Dir
	}
	w := &workflow{id: b.ID, baseID: b.BaseID, dir: dir, encrypted: b.Encrypted, slug: filepath.Base(dir)}
	w.reason = bundle.Availability(b)
	w.available = w.reason == bundle.Available
	if b.Integrity != bundle.Verified && b.Integrity != bundle.ContentVerified {
		w.setLoadErr(b.Err)
		return w
	}
	if w.available {
		names := b.DeclaredParams()
		types := make([]string, len(names))
		for i, n := range names {
			p, _ := b.Param(n)
			types[i] = p.Type
		}
		w.params = paramsOf(names, types)
	} else {
		w.setLoadErr(nil)
	}
	w.stepCount = b.StepCount
	sv := b.SchemaVersion
	w.schemaVersion = &sv
	w.contentDigest = b.ContentDigest
	if p, err := b.Protected(); err == nil {
		name := p.Name
		w.name = &name
		if p.AgentSlug != "" {
			w.slug = p.AgentSlug
		}
		w.intents = p.StepIntents
		w.recorded = map[string]string{}
		for _, nv := range p.RecordedParams {
			w.recorded[nv.Name] = nv.Value
		}
	}
	return w
}

// verifyForRun fully re-verifies w's bundle at call time (docs/runs.md
// "The run call": a fresh verification at each call). It returns the
// verified bundle digest, or ok false when the bundle no longer fully
// verifies or changed since startup.
func (s *bundleLoader) verifyForRun(w *workflow) (string, bool) {
	b, err := bundle.Load(w.dir, s.bundleOpts(bundle.Full)...)
	if err != nil || b == nil || !b.Verified() || b.ContentDigest != w.contentDigest {
		return "", false
	}
	return b.BundleSHA256(), true
}
