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

// Discover finds and loads the bundles under root (flow-bundle.md §1): if
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
	isBundle, err := hasMarker(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
	}
	var dirs []string
	pre := map[int]*Bundle{}
	if isBundle {
		dirs = []string{root}
	} else {
		entries, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRoot, sanitize(err))
		}
		for _, e := range entries { // os.ReadDir sorts by name (byte order)
			child := joinRoot(root, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				// Refused, never followed; stat only to learn whether it
				// poses as a folder (a symlink to a file is just ignored).
				if st, err := os.Stat(child); err == nil && st.IsDir() {
					b := &Bundle{Dir: child}
					b.fail(newErr(KindUnsafePath, "bundle folder is a symlink"))
					b.setFallbackID(false, false)
					pre[len(dirs)] = b
					dirs = append(dirs, child)
				}
			case e.IsDir():
				ok, err := hasMarker(child)
				if ok || err != nil {
					// An unreadable child is reported (as not_a_bundle) rather
					// than silently skipped: fail closed.
					dirs = append(dirs, child)
				}
			}
		}
	}
	out := loadMany(dirs, pre, cfg)
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle discovery stopped: %w", err)
	}
	assignSuffixes(out)
	return out, nil
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
	b := newLoader(cfg, newLimiter(cfg.workers)).load(dir)
	if err := cfg.ctx.Err(); err != nil {
		return nil, fmt.Errorf("bundle verification stopped: %w", err)
	}
	return b, b.Err
}

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
// resolves agent slug collisions (flow-bundle.md §10).
func assignSuffixes(bs []*Bundle) {
	count := map[string]int{}
	slugs := map[string]bool{}
	for _, b := range bs {
		count[b.BaseID]++
		b.ID = b.BaseID
		if n := count[b.BaseID]; n > 1 {
			b.ID = b.BaseID + "_" + strconv.Itoa(n)
		}
		if p := b.protected; p != nil {
			if slugs[p.AgentSlug] {
				p.AgentSlug = slugify(p.AgentSlug+"_"+filepath.Base(b.Dir), '_')
			}
			slugs[p.AgentSlug] = true
		}
	}
}
