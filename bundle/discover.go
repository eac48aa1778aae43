package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Discover finds and loads the bundles under root (docs/bundle.md,
// Discovery): if
// root is itself a bundle it is the only one; otherwise every immediate child
// folder that is a bundle, in byte order of folder names, without recursion.
// Other entries are ignored. Every symlink is refused and never followed: a
// root or child that is a symlink to a folder is reported as a [Failed]
// bundle with [KindUnsafePath].
//
// Discovery is fail-soft: each bundle carries its own result and one bad
// bundle does not stop the others. Duplicate ids get "_2", "_3", … in
// discovery order. A root with no bundle yields an empty slice.
//
// The error is non-nil only for invalid options, when root itself cannot
// be used (it does not exist, is not a folder, or cannot be read), or when
// the [WithContext] context is done; it then wraps [ErrOption], [ErrRoot] or
// the context's error, and never names the path.
func Discover(root string, opts ...Option) ([]*Bundle, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle discovery stopped: %w", err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		b := &Bundle{Dir: root}
		b.fail(newErr(KindUnsafePath, "bundle root is a symlink"))
		b.setFallbackID(false, false)
		return []*Bundle{b}, nil
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: not a folder", ErrRoot)
	}
	cands, err := candidates(root)
	if err != nil {
		return nil, err
	}
	dirs := make([]string, len(cands))
	pre := map[int]*Bundle{}
	for i, c := range cands {
		dirs[i] = c.Dir
		if c.Symlink {
			pre[i] = RefusedSymlink(c.Dir)
		}
	}
	out := loadMany(dirs, pre, cfg)
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle discovery stopped: %w", err)
	}
	assignSuffixes(out)
	return out, nil
}

// Candidate is one folder that discovery loads (or refuses) under a root.
type Candidate struct {
	// Dir is the root as given, or root + separator + child folder name.
	Dir string
	// Symlink marks a child entry that is a symbolic link to a folder: it is
	// refused as [KindUnsafePath] and never followed ([RefusedSymlink]).
	Symlink bool
}

// Candidates returns the folders [Discover] would load under root, in
// discovery order, without loading any: root itself when it is a bundle,
// otherwise each immediate child folder holding a marker, plus each child
// symlink to a folder (marked). A root that is itself a symlink is its one
// (marked) candidate, as in [Discover]; a root that is missing, not a folder
// or unreadable gives an error wrapping [ErrRoot]. Callers that load the candidates themselves (serve's
// verified-digest cache) use [Load] and [RefusedSymlink] and then
// [SuffixIDs], so discovery has one rule.
func Candidates(root string) ([]Candidate, error) { return CandidatesKnown(root, nil) }

// CandidatesKnown is [Candidates] for a caller that has just looked inside
// some child folders itself: a child folder for which marked reports true
// is taken as holding a marker without looking again (serve's digest cache
// has just stat'ed every entry of each cached folder, the marker
// included). Every other child is looked at as [Candidates] does, so the
// result is the same as long as marked is only true for a folder whose
// marker was just seen.
func CandidatesKnown(root string, marked func(dir string) bool) ([]Candidate, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return []Candidate{{Dir: root, Symlink: true}}, nil
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: not a folder", ErrRoot)
	}
	return candidatesKnown(root, marked)
}

func candidates(root string) ([]Candidate, error) { return candidatesKnown(root, nil) }

func candidatesKnown(root string, marked func(string) bool) ([]Candidate, error) {
	isBundle, err := hasMarker(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	if isBundle {
		return []Candidate{{Dir: root}}, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	var out []Candidate
	for _, e := range entries { // os.ReadDir sorts by name (byte order)
		child := joinRoot(root, e.Name())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			// Refused, never followed; stat only to learn whether it
			// poses as a folder (a symlink to a file is just ignored).
			if st, err := os.Stat(child); err == nil && st.IsDir() {
				out = append(out, Candidate{Dir: child, Symlink: true})
			}
		case e.IsDir():
			if marked != nil && marked(child) {
				out = append(out, Candidate{Dir: child})
				continue
			}
			ok, err := hasMarker(child)
			if ok || err != nil {
				// An unreadable child is reported (as not_a_bundle) rather
				// than silently skipped: fail closed.
				out = append(out, Candidate{Dir: child})
			}
		}
	}
	return out, nil
}

// RefusedSymlink is the failed bundle of a symlinked candidate folder
// ([KindUnsafePath], rule-3 id over no marker), as [Discover] reports it.
func RefusedSymlink(dir string) *Bundle {
	b := &Bundle{Dir: dir}
	b.fail(newErr(KindUnsafePath, "bundle folder is a symlink"))
	b.setFallbackID(false, false)
	return b
}

// SuffixIDs returns the ids of base ids in discovery order: the N-th
// occurrence of an id gets "_N" (N >= 2), as [Discover] assigns them
// (docs/bundle.md, Workflow ids). serve applies it across all of its roots.
func SuffixIDs(bases []string) []string {
	count := make(map[string]int, len(bases))
	out := make([]string, len(bases))
	for i, b := range bases {
		count[b]++
		out[i] = b
		if n := count[b]; n > 1 {
			out[i] = b + "_" + strconv.Itoa(n)
		}
	}
	return out
}

// joinRoot joins a child name to the root as given (echoing the operand).
func joinRoot(root, name string) string {
	if len(root) > 0 && os.IsPathSeparator(root[len(root)-1]) {
		return root + name
	}
	return root + string(filepath.Separator) + name
}

// hasMarker reports whether dir holds an entry named workflow.json or
// workflow.json.enc (of any type: a symlinked or non-regular marker is
// diagnosed by the loader). Errors other than "does not exist" are returned.
func hasMarker(dir string) (bool, error) {
	for _, m := range []string{markerPlain, markerSealed} {
		_, err := os.Lstat(filepath.Join(dir, m))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
	}
	return false, nil
}

// Load loads and verifies the single bundle folder dir (no discovery). The
// returned bundle is non-nil unless the options are invalid, dir cannot be
// used, or the [WithContext] context is done (then the error wraps
// [ErrOption], [ErrRoot] or the context's error). For a loaded bundle,
// the error is b.Err: nil when Integrity is Verified, ContentVerified or
// LegacyUnverified, otherwise an [*Error] matching its kind sentinel. A run
// must check [Bundle.Verified], since a legacy bundle loads without error.
func Load(dir string, opts ...Option) (*Bundle, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		b := &Bundle{Dir: dir}
		b.fail(newErr(KindUnsafePath, "bundle folder is a symlink"))
		b.setFallbackID(false, false)
		return b, b.Err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%w: not a folder", ErrRoot)
	}
	if _, err := hasMarker(dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle verification stopped: %w", err)
	}
	ld := loaders.Get().(*loader)
	ld.cfg, ld.lim = cfg, newLimiter(cfg.workers)
	b := ld.load(dir)
	ld.cfg, ld.lim = nil, nil
	loaders.Put(ld)
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle verification stopped: %w", err)
	}
	return b, b.Err
}

// loaders recycles Load's loaders (their copy buffer and JSON documents)
// across calls: a caller that loads many folders one by one (serve's
// listing) allocates them once per worker instead of once per bundle.
var loaders = sync.Pool{New: func() any { return &loader{buf: make([]byte, 64<<10)} }}

// limiter bounds CPU- and memory-heavy work (scrypt + AES-GCM) across all
// bundles of one call, so nested fan-out never oversubscribes the cores or
// holds more than `workers` scrypt buffers at once.
type limiter chan struct{}

func newLimiter(n int) limiter { return make(limiter, n) }
func (l limiter) acquire()     { l <- struct{}{} }
func (l limiter) release()     { <-l }

func loadMany(dirs []string, pre map[int]*Bundle, cfg *config) []*Bundle {
	out := make([]*Bundle, len(dirs))
	lim := newLimiter(cfg.workers)
	next := make(chan int)
	var wg sync.WaitGroup
	workers := min(cfg.workers, len(dirs))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ld := newLoader(cfg, lim)
			for i := range next {
				if cfg.ctx.Err() != nil {
					continue // drain: the caller discards everything
				}
				out[i] = ld.load(dirs[i])
			}
		}()
	}
	for i := range dirs {
		if b, ok := pre[i]; ok {
			out[i] = b
			continue
		}
		if cfg.ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// assignSuffixes gives duplicate ids "_2", "_3", … in discovery order and
// resolves agent slug collisions (docs/bundle.md, Workflow ids).
func assignSuffixes(bs []*Bundle) {
	bases := make([]string, len(bs))
	for i, b := range bs {
		bases[i] = b.BaseID
	}
	ids := SuffixIDs(bases)
	slugs := map[string]bool{}
	for i, b := range bs {
		b.ID = ids[i]
		if p := b.protected; p != nil {
			if slugs[p.AgentSlug] {
				p.AgentSlug = slugify(p.AgentSlug+"_"+filepath.Base(b.Dir), '_')
			}
			slugs[p.AgentSlug] = true
		}
	}
}

// deeperReadLimit bounds the folders [Deeper] reads, so a hint for a huge
// tree costs a fixed, small amount of work.
const deeperReadLimit = 64

// Deeper returns up to max bundle folders two levels below root (root/a/b
// holding workflow.json or workflow.json.enc), which [Discover] never looks
// at: it looks at root and its immediate subfolders only. It exists for the
// hint given when a root holds no bundle. Symbolic links are never followed,
// at most a fixed number of folders is read, and unreadable folders are
// skipped; the result is in byte order.
func Deeper(root string, max int) []string {
	if max <= 0 {
		return nil
	}
	reads := 0
	readDirs := func(dir string) []string {
		if reads >= deeperReadLimit {
			return nil
		}
		reads++
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil
		}
		var dirs []string
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 && e.IsDir() {
				dirs = append(dirs, joinRoot(dir, e.Name()))
			}
		}
		return dirs
	}
	var found []string
	for _, child := range readDirs(root) {
		for _, grandchild := range readDirs(child) {
			if ok, err := hasMarker(grandchild); ok && err == nil {
				found = append(found, grandchild)
				if len(found) == max {
					return found
				}
			}
		}
	}
	return found
}
