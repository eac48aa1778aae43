package skill

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// SumsFile is the digest manifest inside every packed skill: one line
// "<sha256 hex>  <relpath>\n" per file except itself, sorted by relpath
// bytes, so `sha256sum -c SHA256SUMS` works inside the skill folder.
const SumsFile = "SHA256SUMS"

// entry is one file or folder of a skill tree, relative to the skill root.
type entry struct {
	rel  string // slash path relative to the root, never "" (the root itself is implicit)
	dir  bool
	mode fs.FileMode // normalized: 0755 for dirs and executables, else 0644
	size int64
	sum  [32]byte // files only, filled by hashEntries
}

// walkOptions selects what walkTree skips.
type walkOptions struct {
	// packSkips drops .git/, node_modules/, __pycache__/, *.pyc, .DS_Store
	// and a root SHA256SUMS (docs/skills.md, Pack).
	packSkips bool
}

// walkTree lists root with lstat in byte-wise slash-path order. It refuses
// (ErrUnsafeArchive) symlinks, devices, FIFOs, sockets, names that are not
// UTF-8 or hold control characters or a backslash, and paths that collide
// after NFC normalisation and full case folding (the rule set verify
// applies, names.go). skipped counts what packSkips dropped.
func walkTree(root string, opt walkOptions) (entries []entry, skipped int, err error) {
	names := newNameSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			if !d.IsDir() {
				return fmt.Errorf("%s is not a folder", root)
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		base := path.Base(rel)
		if opt.packSkips {
			switch {
			case d.IsDir() && (base == ".git" || base == "node_modules" || base == "__pycache__"):
				skipped++
				return filepath.SkipDir
			case !d.IsDir() && (base == ".DS_Store" || strings.HasSuffix(base, ".pyc") || rel == SumsFile):
				skipped++
				return nil
			}
		}
		if err := checkRelPath(rel); err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		t := fi.Mode().Type()
		e := entry{rel: rel}
		switch {
		case t == fs.ModeDir:
			e.dir, e.mode = true, 0o755
		case t == 0:
			e.size, e.mode = fi.Size(), 0o644
			if fi.Mode().Perm()&0o111 != 0 {
				e.mode = 0o755
			}
		default:
			return fmt.Errorf("%w: refusing %s: %s", ErrUnsafeArchive, rel, kindOf(t))
		}
		// The one collision rule set shared with verify (names.go).
		if msg := names.add(rel, e.dir); msg != "" {
			return fmt.Errorf("%w: %s", ErrUnsafeArchive, msg)
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	return entries, skipped, nil
}

func kindOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symlink"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "device"
	default:
		return "special file"
	}
}

// checkRelPath refuses path components that break installs or extraction:
// not UTF-8, control characters, backslash, empty, "." or "..".
func checkRelPath(rel string) error {
	if !utf8.ValidString(rel) {
		return fmt.Errorf("%w: a path is not valid UTF-8", ErrUnsafeArchive)
	}
	for _, r := range rel {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Errorf("%w: a path holds a control character", ErrUnsafeArchive)
		}
		if r == '\\' {
			return fmt.Errorf("%w: path %s holds a backslash", ErrUnsafeArchive, rel)
		}
	}
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%w: path %s has an empty, . or .. component", ErrUnsafeArchive, rel)
		}
	}
	return nil
}

// hashEntries fills sum for every file, reading with up to workers files at
// once.
func hashEntries(root string, entries []entry, workers int) error {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	jobs := make(chan int)
	errs := make([]error, len(entries))
	for range workers {
		wg.Go(func() {
			buf := make([]byte, 256<<10)
			for i := range jobs {
				errs[i] = hashFile(filepath.Join(root, filepath.FromSlash(entries[i].rel)), &entries[i], buf)
			}
		})
	}
	for i := range entries {
		if !entries[i].dir {
			jobs <- i
		}
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func hashFile(p string, e *entry, buf []byte) error {
	f, _, err := fsutil.Open(p, anyFile, fsutil.NoFollow)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return fmt.Errorf("reading %s: %w", e.rel, err)
	}
	if n != e.size {
		return fmt.Errorf("%s changed size while packing", e.rel)
	}
	copy(e.sum[:], h.Sum(nil))
	return nil
}

// sumsBytes renders SHA256SUMS for the files of entries (already sorted).
func sumsBytes(entries []entry) []byte {
	var b strings.Builder
	for _, e := range entries {
		if e.dir {
			continue
		}
		b.WriteString(hex.EncodeToString(e.sum[:]))
		b.WriteString("  ")
		b.WriteString(e.rel)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// TreeDigest returns "h1:" + base64(sha256(sums)), the construction of Go's
// dirhash.Hash1 applied to a SHA256SUMS file.
func TreeDigest(sums []byte) string {
	s := sha256.Sum256(sums)
	return "h1:" + base64.StdEncoding.EncodeToString(s[:])
}

// copyTree copies src into the existing folder dstRel beneath r, refusing
// symlinks and special files in src, with modes normalised: 0644 files,
// 0755 executables and folders. Every write goes through r, so no link
// beneath the root is followed; every source file is opened without
// following a link (walkTree refused links, this catches a swap) and as a
// regular file only. It stops with ctx's error once ctx is canceled.
func copyTree(ctx context.Context, src string, r *fsutil.Root, dstRel string) error {
	entries, _, err := walkTree(src, walkOptions{})
	if err != nil {
		return err
	}
	if err := r.Chmod(dstRel, 0o755); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		rel := dstRel + "/" + e.rel
		if e.dir {
			if err := r.Mkdir(rel, 0o755); err != nil {
				return err
			}
			if err := r.Chmod(rel, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := copyFileInto(ctx, filepath.Join(src, filepath.FromSlash(e.rel)), r, rel, e.mode, buf); err != nil {
			return err
		}
	}
	return nil
}

// anyFile opens a tree member of any size (the walk already bounded what
// is read) as a regular file only.
var anyFile = fsutil.Limit{Kind: "skill file", Max: math.MaxInt64}

func copyFileInto(ctx context.Context, src string, r *fsutil.Root, rel string, mode fs.FileMode, buf []byte) error {
	in, _, err := fsutil.Open(src, anyFile, fsutil.NoFollow)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyBuffer(out, fsutil.CtxReader(ctx, in), buf); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(mode); err != nil { // umask-independent
		out.Close()
		return err
	}
	return out.Close()
}
