package skill

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// Format is an archive format.
type Format string

const (
	// FormatZip is a zip archive (.zip or .skill), the shape Claude accepts
	// for upload: one top folder <name>/, file entries only.
	FormatZip Format = "zip"
	// FormatTarZst is a PAX tar compressed with zstd (.tar.zst or .tzst).
	FormatTarZst Format = "tar.zst"
)

// ErrUnknownFormat is returned by [FormatFor] for an unsupported suffix.
var ErrUnknownFormat = errors.New("unknown archive suffix (want .skill, .zip, .tar.zst or .tzst)")

// FormatFor picks the archive format from a file name's suffix.
func FormatFor(name string) (Format, error) {
	low := strings.ToLower(name)
	switch {
	case strings.HasSuffix(low, ".skill"), strings.HasSuffix(low, ".zip"):
		return FormatZip, nil
	case strings.HasSuffix(low, ".tar.zst"), strings.HasSuffix(low, ".tzst"):
		return FormatTarZst, nil
	}
	return "", ErrUnknownFormat
}

// Epoch is the fixed modification time of every archive entry: the zip
// minimum, 1980-01-01T00:00:00Z.
var Epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// Thresholds above which [Pack] warns: the default limits of `skills add <url>`.
const (
	WarnArchiveBytes  = 10 << 20
	WarnUnpackedBytes = 25 << 20
	WarnFiles         = 1000
)

// PackOptions configure [Pack].
type PackOptions struct {
	// Format of the archive. Required.
	Format Format
	// Concurrency of the zstd encoder and of hashing; 0 means GOMAXPROCS.
	// The output bytes do not depend on it.
	Concurrency int
	// Warn receives warnings (skipped files, size thresholds). May be nil.
	Warn func(msg string)
	// Progress, if set, is called after each file of the tree is packed
	// with the files and bytes done so far and the totals (the generated
	// SHA256SUMS is not counted).
	Progress func(files, totalFiles int, bytes, totalBytes int64)
	// Context stops the pack (SIGINT/SIGTERM): reading and compressing end
	// within about a megabyte of work and the context's error is returned;
	// [PackFile] then leaves no temporary file. Default
	// context.Background().
	Context context.Context
}

// PackResult describes a written archive.
type PackResult struct {
	Name       string `json:"-"`
	Format     Format `json:"format"`
	SHA256     string `json:"sha256"`      // hex of the archive bytes
	TreeDigest string `json:"tree_digest"` // h1:… of SHA256SUMS
	Files      int    `json:"files"`       // files in the archive, SHA256SUMS included
	Bytes      int64  `json:"bytes"`       // archive size
	Unpacked   int64  `json:"-"`           // sum of file sizes
	Skipped    int    `json:"-"`
}

// Pack validates the skill folder dir (docs/skills.md, Skill rules; an error finding
// refuses) and writes a reproducible archive of it to w: every entry under one
// top folder <name>/, sorted, with mtime [Epoch], owner 0, modes 0644/0755,
// and a generated SHA256SUMS. It refuses (wrapping [ErrUnsafeArchive])
// symlinks, special files, unsafe names and case collisions.
func Pack(dir string, w io.Writer, opt PackOptions) (*PackResult, error) {
	if opt.Format != FormatZip && opt.Format != FormatTarZst {
		return nil, ErrUnknownFormat
	}
	conc := opt.Concurrency
	if conc <= 0 {
		conc = runtime.GOMAXPROCS(0)
	}
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep, err := Validate(dir)
	if err != nil {
		return nil, err
	}
	if err := rep.FirstError(); err != nil {
		return nil, err
	}
	name := rep.Name
	entries, skipped, err := walkTree(dir, walkOptions{packSkips: true})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if skipped > 0 {
		warn(fmt.Sprintf("skipped %d paths (.git, node_modules, __pycache__, *.pyc, .DS_Store, SHA256SUMS)", skipped))
	}
	res := &PackResult{Name: name, Format: opt.Format, Skipped: skipped}
	for _, e := range entries {
		if !e.dir {
			res.Files++
			res.Unpacked += e.size
		}
	}
	res.Files++ // SHA256SUMS

	// The compressed stream is written and hashed as the encoder hands it
	// over, each block while it is still in the cache: with encoder
	// concurrency the zstd encoder already writes from a goroutine of its
	// own, beside the compressor. (A goroutine of ours that gathered the
	// stream into 4 MiB batches first cost a copy of every byte and a
	// write of bytes long out of the cache: 20 % more CPU, BENCHMARKS.md.)
	h := sha256.New()
	aw := &countWriter{w: io.MultiWriter(w, h)}
	src := newTreeSource(ctx, dir, entries, opt.Progress, res.Files-1, res.Unpacked) // progress counts the tree's files
	defer src.stop()
	var sums []byte
	switch opt.Format {
	case FormatTarZst:
		sums, err = writeTarZst(aw, name, entries, src, conc)
	case FormatZip:
		// zip's own buffer is 4 KiB: gather its writes into fewer calls.
		bw := bufio.NewWriterSize(aw, 1<<20)
		if sums, err = writeZip(bw, name, entries, src); err == nil {
			err = bw.Flush()
		}
	}
	if err != nil {
		return nil, err
	}
	res.TreeDigest = TreeDigest(sums)
	res.Unpacked += int64(len(sums))
	res.SHA256 = hex.EncodeToString(h.Sum(nil))
	res.Bytes = aw.n
	if res.Bytes > WarnArchiveBytes || res.Unpacked > WarnUnpackedBytes || res.Files > WarnFiles {
		warn(fmt.Sprintf("archive exceeds the default limits of `skills add <url>` (10 MiB archived, 25 MiB unpacked, 1000 files): %d bytes archived, %d unpacked, %d files",
			res.Bytes, res.Unpacked, res.Files))
	}
	return res, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// treeSource reads the files of a tree, in entry order, in its own
// goroutine: it hashes each file while the caller compresses earlier
// content, so every file is read exactly once and hashing overlaps with
// compression. Consecutive files are packed into large batches, so the two
// goroutines hand off a few dozen times for hundreds of MB, which keeps the
// pipeline cheap on a loaded machine.
type treeSource struct {
	ctx        context.Context
	entries    []entry
	batches    chan *batch
	free       chan *batch
	done       chan struct{}
	progress   func(files, totalFiles int, bytes, totalBytes int64)
	totalFiles int
	totalBytes int64
	files      int
	bytes      int64
	cur        *batch // batch being consumed
}

// batch is a buffer holding consecutive pieces of files.
type batch struct {
	buf  []byte
	segs []segment
	err  error // set on the last batch when reading failed
}

// segment is buf[off:off+n] of file entries[idx]; last marks the end of the
// file, after which entries[idx].sum is set.
type segment struct {
	idx    int
	off, n int
	last   bool
}

const (
	batchSize  = 8 << 20
	batchAhead = 2
	packPiece  = 1 << 20 // compressed between two cancellation checks
)

func newTreeSource(ctx context.Context, root string, entries []entry, progress func(int, int, int64, int64), totalFiles int, totalBytes int64) *treeSource {
	s := &treeSource{
		ctx: ctx, entries: entries, batches: make(chan *batch, batchAhead), free: make(chan *batch, batchAhead+2),
		done: make(chan struct{}), progress: progress, totalFiles: totalFiles, totalBytes: totalBytes,
	}
	for range batchAhead + 1 {
		s.free <- &batch{buf: make([]byte, 0, batchSize)}
	}
	go s.read(root)
	return s
}

// stop ends the reader goroutine early (on an error downstream).
func (s *treeSource) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

func (s *treeSource) getFree() *batch {
	select {
	case b := <-s.free:
		b.buf, b.segs, b.err = b.buf[:0], b.segs[:0], nil
		return b
	case <-s.done:
		return nil
	}
}

func (s *treeSource) send(b *batch) bool {
	select {
	case s.batches <- b:
		return true
	case <-s.done:
		return false
	}
}

func (s *treeSource) read(root string) {
	defer close(s.batches)
	b := s.getFree()
	if b == nil {
		return
	}
	for i := range s.entries {
		e := &s.entries[i]
		if e.dir {
			continue
		}
		var err error
		if b, err = s.readFile(filepath.Join(root, filepath.FromSlash(e.rel)), i, e, b); err != nil {
			if b == nil {
				return
			}
			b.err = err
			s.send(b)
			return
		}
		if b == nil {
			return
		}
	}
	if len(b.segs) > 0 {
		s.send(b)
	}
}

// readFile appends file i to batch b, sending full batches, and returns
// the batch to continue with (nil when stopped).
func (s *treeSource) readFile(p string, i int, e *entry, b *batch) (*batch, error) {
	// Regular files only, never through a final link (the walk refused
	// links; this catches a swap, and a FIFO swapped in cannot block).
	f, _, err := fsutil.Open(p, anyFile, fsutil.NoFollow)
	if err != nil {
		return b, err
	}
	defer f.Close()
	in := fsutil.CtxReader(s.ctx, f) // each read checks for cancellation
	h := sha256.New()
	var n int64
	for {
		if len(b.buf) == cap(b.buf) {
			if !s.send(b) {
				return nil, nil
			}
			if b = s.getFree(); b == nil {
				return nil, nil
			}
		}
		off := len(b.buf)
		k, err := io.ReadFull(in, b.buf[off:cap(b.buf)])
		b.buf = b.buf[:off+k]
		n += int64(k)
		h.Write(b.buf[off : off+k])
		if n > e.size {
			return b, fmt.Errorf("%s changed while packing", e.rel)
		}
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return b, fmt.Errorf("reading %s: %w", e.rel, err)
		}
		if eof {
			if n != e.size {
				return b, fmt.Errorf("%s changed while packing", e.rel)
			}
			copy(e.sum[:], h.Sum(nil))
		}
		if k > 0 || eof {
			b.segs = append(b.segs, segment{idx: i, off: off, n: k, last: eof})
		}
		if eof {
			return b, nil
		}
	}
}

// copyTo writes the content of entries[idx] to w.
func (s *treeSource) copyTo(w io.Writer, idx int) error {
	for {
		if s.cur != nil && len(s.cur.segs) == 0 {
			if s.cur.err != nil {
				return s.cur.err
			}
			s.free <- s.cur
			s.cur = nil
		}
		if s.cur == nil {
			b, ok := <-s.batches
			if !ok {
				return errors.New("internal: tree reader ended early")
			}
			s.cur = b
			if len(b.segs) == 0 && b.err != nil {
				return b.err
			}
		}
		seg := s.cur.segs[0]
		if seg.idx != idx {
			if s.cur.err != nil {
				return s.cur.err
			}
			return errors.New("internal: tree reader out of order")
		}
		s.cur.segs = s.cur.segs[1:]
		// Compress in pieces, checking for cancellation between them, so
		// batches already read do not delay a stop.
		for p := s.cur.buf[seg.off : seg.off+seg.n]; len(p) > 0; {
			if err := s.ctx.Err(); err != nil {
				return err
			}
			k := min(len(p), packPiece)
			if _, err := w.Write(p[:k]); err != nil {
				return err
			}
			p = p[k:]
		}
		s.bytes += int64(seg.n)
		if seg.last {
			s.files++
			if s.progress != nil {
				s.progress(s.files, s.totalFiles, s.bytes, s.totalBytes)
			}
			return nil
		}
	}
}

// Entries are written in byte-wise path order; the generated SHA256SUMS
// comes last, because it can only be written once every file has been
// read, and reading every file once is what keeps pack at the speed of
// `tar | zstd` (BENCHMARKS.md).

func writeTarZst(w io.Writer, name string, entries []entry, src *treeSource, conc int) ([]byte, error) {
	// Never EncodeAll: for large inputs it produces different bytes from
	// the streaming writer. Streaming output on v1.18.6 is identical for any
	// concurrency and write chunking.
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(conc))
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	hdr := func(p string, dir bool, mode fs.FileMode, size int64) *tar.Header {
		h := &tar.Header{Name: p, Mode: int64(mode), ModTime: Epoch, Format: tar.FormatPAX}
		if dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, size
		}
		return h
	}
	if err := tw.WriteHeader(hdr(name+"/", true, 0o755, 0)); err != nil {
		return nil, err
	}
	for i := range entries {
		// Read fields through a pointer: the reader goroutine writes sum.
		e := &entries[i]
		p := name + "/" + e.rel
		if e.dir {
			p += "/"
		}
		if err := tw.WriteHeader(hdr(p, e.dir, e.mode, e.size)); err != nil {
			return nil, err
		}
		if !e.dir {
			if err := src.copyTo(tw, i); err != nil {
				return nil, err
			}
		}
	}
	sums := sumsBytes(entries)
	if err := tw.WriteHeader(hdr(name+"/"+SumsFile, false, 0o644, int64(len(sums)))); err != nil {
		return nil, err
	}
	if _, err := tw.Write(sums); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return sums, zw.Close()
}

func writeZip(w io.Writer, name string, entries []entry, src *treeSource) ([]byte, error) {
	zw := zip.NewWriter(w)
	create := func(rel string, mode fs.FileMode) (io.Writer, error) {
		fh := &zip.FileHeader{Name: name + "/" + rel, Method: zip.Deflate, Modified: Epoch}
		fh.SetMode(mode)
		return zw.CreateHeader(fh)
	}
	for i := range entries {
		e := &entries[i] // the reader goroutine writes sum
		if e.dir {
			continue // file entries only
		}
		fw, err := create(e.rel, e.mode)
		if err != nil {
			return nil, err
		}
		if err := src.copyTo(fw, i); err != nil {
			return nil, err
		}
	}
	sums := sumsBytes(entries)
	fw, err := create(SumsFile, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := fw.Write(sums); err != nil {
		return nil, err
	}
	return sums, zw.Close()
}

// PackFile packs dir into the file out (format from its suffix) all or
// nothing: a temporary sibling is written and renamed into place, so out is
// either absent, its previous content, or the complete archive. It then
// writes the sidecar out.sha256 ("<hex>  <basename>\n") the same way. Like
// tar and zstd it does not fsync: the guarantee is atomicity, not
// durability across a power loss.
func PackFile(dir, out string, opt PackOptions) (res *PackResult, err error) {
	if opt.Format == "" {
		if opt.Format, err = FormatFor(out); err != nil {
			return nil, err
		}
	}
	err = writeViaTemp(out, func(f *os.File) error {
		res, err = Pack(dir, f, opt)
		return err
	})
	if err != nil {
		return nil, err
	}
	side := fmt.Sprintf("%s  %s\n", res.SHA256, filepath.Base(out))
	if err := writeViaTemp(out+".sha256", func(f *os.File) error {
		_, err := f.WriteString(side)
		return err
	}); err != nil {
		return nil, err
	}
	return res, nil
}

// writeViaTemp writes path all-or-nothing through internal/util/fsutil: a
// temporary sibling, filled, synced and renamed into place; a link at path
// is replaced, never followed; on any error nothing is left behind.
func writeViaTemp(path string, fill func(*os.File) error) error {
	return fsutil.WriteFileFunc(path, 0o644, fill)
}
