package skill

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/klauspost/compress/zstd"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// Limits caps what [VerifyArchive] and [Install] read from an archive. The
// error for a limit hit names it, e.g. "archive exceeds max-total-unpacked
// (1 GiB)".
type Limits struct {
	MaxArchiveBytes  int64 // max-archive-size
	MaxEntries       int   // max-entries
	MaxFileBytes     int64 // max-file-size
	MaxTotalUnpacked int64 // max-total-unpacked
	MaxRatio         int64 // max-compression-ratio, per zip entry and for the whole archive
}

// DefaultLimits are the limits of docs/skills.md, Verify.
var DefaultLimits = Limits{
	MaxArchiveBytes:  256 << 20,
	MaxEntries:       10000,
	MaxFileBytes:     100 << 20,
	MaxTotalUnpacked: 1 << 30,
	MaxRatio:         1000,
}

func limitErr(what string, n int64, unit bool) error {
	v := fmt.Sprint(n)
	if unit {
		v = humanBytes(n)
	}
	return fmt.Errorf("%w: %s (%s)", ErrUnsafeArchive, what, v)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// VerifyOptions configure [VerifyArchive].
type VerifyOptions struct {
	// SHA256 is the expected archive digest, bare hex or "sha256:<hex>".
	// When empty, the sidecar FILE.sha256 is used if it exists.
	SHA256 string
	// Limits default to [DefaultLimits].
	Limits *Limits
	// Context stops the check (SIGINT/SIGTERM) between reads; default
	// context.Background().
	Context context.Context
}

// VerifyResult describes a verified archive. Every field is safe to print.
type VerifyResult struct {
	Archive    string `json:"archive"`
	Format     Format `json:"-"`
	SHA256     string `json:"sha256"` // hex
	TreeDigest string `json:"tree_digest"`
	Name       string `json:"name"`
	Files      int    `json:"-"` // files, SHA256SUMS included
	// DigestSource says what the archive digest was checked against:
	// "flag", "sidecar" or "" (not checked).
	DigestSource string `json:"-"`
}

// ErrOption is returned (wrapped) for a malformed option value.
var ErrOption = errors.New("invalid option")

// ErrUnknownArchive is returned (wrapped in [ErrUnsafeArchive]) when the
// file is neither a zip nor a zstd stream.
var ErrUnknownArchive = fmt.Errorf("%w: neither a zip archive nor a zstd stream", ErrUnsafeArchive)

// VerifyArchive checks a packed skill without writing anything: the archive
// digest (against opt.SHA256 or the sidecar), every entry name and type, the
// size and ratio limits, SKILL.md against the skill rules, and SHA256SUMS
// against every file. Errors wrap [ErrUnsafeArchive], [ErrDigestMismatch] or
// [ErrInvalid].
func VerifyArchive(file string, opt VerifyOptions) (*VerifyResult, error) {
	return readSkillArchive(file, opt, nil)
}

// sink receives each regular file of an archive (rel is relative to the top
// folder top) and must consume r; dirs are announced with r == nil.
type sink func(top, rel string, dir bool, mode fs.FileMode, r io.Reader) error

func readSkillArchive(file string, opt VerifyOptions, sk sink) (*VerifyResult, error) {
	lim := DefaultLimits
	if opt.Limits != nil {
		lim = *opt.Limits
	}
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	// One bounded open (internal/util/fsutil): a FIFO, socket or device is
	// refused at once, without blocking; the size cap is max-archive-size.
	f, fi, err := fsutil.Open(file, fsutil.Limit{Kind: fsutil.Archive.Kind, Max: lim.MaxArchiveBytes})
	if errors.Is(err, fsutil.ErrTooLarge) {
		return nil, limitErr("archive exceeds max-archive-size", lim.MaxArchiveBytes, true)
	}
	if errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrPath, file)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, file, unwrapPathError(err))
	}
	defer f.Close()
	size := fi.Size()
	res := &VerifyResult{Archive: file}

	// The archive digest first: nothing else is trusted before it matches.
	h := sha256.New()
	if _, err := io.Copy(h, fsutil.CtxReader(ctx, f)); err != nil {
		return nil, err
	}
	res.SHA256 = hex.EncodeToString(h.Sum(nil))
	want, source, err := expectedDigest(ctx, file, opt.SHA256)
	if err != nil {
		return nil, err
	}
	if want != "" && want != res.SHA256 {
		return nil, fmt.Errorf("%w: archive sha256 does not match the %s", ErrDigestMismatch, map[string]string{"flag": "--sha256 value", "sidecar": "sidecar " + filepath.Base(file) + ".sha256"}[source])
	}
	res.DigestSource = source

	magic := make([]byte, 4)
	if _, err := f.ReadAt(magic, 0); err != nil {
		return nil, ErrUnknownArchive
	}
	w := &walker{ctx: ctx, lim: lim, archiveSize: size, sink: sk, names: newNameSet(), files: map[string][32]byte{}}
	switch {
	case bytes.Equal(magic, []byte("PK\x03\x04")):
		res.Format = FormatZip
		err = w.zip(f, size)
	case bytes.Equal(magic, []byte{0x28, 0xB5, 0x2F, 0xFD}):
		res.Format = FormatTarZst
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		err = w.tarZst(f)
	default:
		return nil, ErrUnknownArchive
	}
	if err != nil {
		return nil, err
	}
	if err := w.checkContent(); err != nil {
		return nil, err
	}
	res.Name, res.TreeDigest, res.Files = w.top, TreeDigest(w.sums), len(w.files)+1
	return res, nil
}

var hexDigest = lazyre.New(`^[0-9a-f]{64}$`)

// expectedDigest returns the digest to check and where it came from.
func expectedDigest(ctx context.Context, file, flag string) (string, string, error) {
	if flag != "" {
		d := strings.ToLower(strings.TrimPrefix(flag, "sha256:"))
		if !hexDigest().MatchString(d) {
			return "", "", fmt.Errorf("%w: --sha256 must be 64 hex digits (a sha256: prefix is allowed)", ErrOption)
		}
		return d, "flag", nil
	}
	data, err := fsutil.ReadFile(ctx, file+".sha256", fsutil.Sidecar)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if errors.Is(err, fsutil.ErrNotRegular) || errors.Is(err, fsutil.ErrTooLarge) {
		return "", "", fmt.Errorf("%w: sidecar %s.sha256: %w", ErrPath, filepath.Base(file), unwrapPathError(err))
	}
	if err != nil {
		return "", "", err
	}
	d, _, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
	d = strings.ToLower(strings.TrimPrefix(d, "sha256:"))
	if !hexDigest().MatchString(d) {
		return "", "", fmt.Errorf("%w: sidecar %s.sha256 is malformed", ErrDigestMismatch, filepath.Base(file))
	}
	return d, "sidecar", nil
}

// walker applies the entry rules while an archive is read.
type walker struct {
	ctx         context.Context
	lim         Limits
	archiveSize int64
	sink        sink
	entries     int
	total       int64 // file bytes actually read
	top         string
	names       *nameSet
	files       map[string][32]byte
	skillMD     []byte
	sums        []byte
	hasSums     bool
}

// entry checks one archive member name and type and returns its path
// relative to the top folder ("" for the top folder itself).
func (w *walker) entry(name string, dir bool) (string, error) {
	w.entries++
	if w.entries > w.lim.MaxEntries {
		return "", limitErr("archive exceeds max-entries", int64(w.lim.MaxEntries), false)
	}
	unsafe := func(why string) error { return fmt.Errorf("%w: %s", ErrUnsafeArchive, why) }
	if !utf8.ValidString(name) {
		return "", unsafe("an entry name is not valid UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return "", unsafe("an entry name holds a NUL or control character")
		}
	}
	switch {
	case strings.Contains(name, `\`):
		return "", unsafe(fmt.Sprintf("entry %q holds a backslash", name))
	case strings.HasPrefix(name, "/"):
		return "", unsafe(fmt.Sprintf("entry %q is an absolute path", name))
	case len(name) >= 2 && name[1] == ':':
		return "", unsafe(fmt.Sprintf("entry %q has a drive letter", name))
	}
	clean := strings.TrimSuffix(name, "/")
	parts := strings.Split(clean, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." {
			return "", unsafe(fmt.Sprintf("entry %q has an empty, . or .. path component (path traversal)", name))
		}
	}
	if w.top == "" {
		w.top = parts[0]
	} else if parts[0] != w.top {
		return "", unsafe(fmt.Sprintf("entry %q is outside the single top folder %s/", name, w.top))
	}
	rel := strings.Join(parts[1:], "/")
	if rel == "" && !dir {
		return "", unsafe(fmt.Sprintf("entry %q must be a folder", name))
	}
	// The one collision rule set shared with pack (names.go): exact,
	// NFC/NFD and case-folded twins, folders spelled two ways, a file that
	// is also a folder or a parent.
	if msg := w.names.add(clean, dir); msg != "" {
		return "", unsafe(msg)
	}
	return rel, nil
}

// file reads one regular file through a limiting reader: header sizes can
// lie, so the actual bytes are counted.
func (w *walker) file(rel string, mode fs.FileMode, r io.Reader, ratioBase int64) error {
	lr := &limitedReader{r: fsutil.CtxReader(w.ctx, r), n: w.lim.MaxFileBytes + 1}
	h := sha256.New()
	var capture *bytes.Buffer
	if rel == "SKILL.md" || rel == SumsFile {
		capture = &bytes.Buffer{}
	}
	var src io.Reader = io.TeeReader(lr, h)
	if capture != nil {
		src = io.TeeReader(src, capture)
	}
	var n int64
	var err error
	if w.sink != nil && rel != SumsFile {
		cr := &countReader{r: src}
		err = w.sink(w.top, rel, false, mode, cr)
		if err == nil {
			_, err = io.Copy(io.Discard, cr) // the sink must not skip bytes
		}
		n = cr.n
	} else {
		n, err = io.Copy(io.Discard, src)
	}
	if lr.read > w.lim.MaxFileBytes {
		return limitErr("entry exceeds max-file-size", w.lim.MaxFileBytes, true)
	}
	if err != nil {
		return err
	}
	if ratioBase >= 0 && n > w.lim.MaxRatio*max(ratioBase, 1) {
		return fmt.Errorf("%w: entry %s exceeds max-compression-ratio (%d:1)", ErrUnsafeArchive, rel, w.lim.MaxRatio)
	}
	w.total += n
	if w.total > w.lim.MaxTotalUnpacked {
		return limitErr("archive exceeds max-total-unpacked", w.lim.MaxTotalUnpacked, true)
	}
	if w.total > w.lim.MaxRatio*max(w.archiveSize, 1) {
		return fmt.Errorf("%w: archive exceeds max-compression-ratio (%d:1)", ErrUnsafeArchive, w.lim.MaxRatio)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	if rel == SumsFile {
		w.hasSums, w.sums = true, capture.Bytes()
		return nil
	}
	w.files[rel] = sum
	if rel == "SKILL.md" {
		w.skillMD = capture.Bytes()
	}
	return nil
}

type limitedReader struct {
	r    io.Reader
	n    int64 // bytes still allowed
	read int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	l.read += int64(n)
	return n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func normMode(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0o644
}

func (w *walker) zip(f *os.File, size int64) error {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return fmt.Errorf("%w: reading zip: %w", ErrUnsafeArchive, err)
	}
	if len(zr.File) > w.lim.MaxEntries {
		return limitErr("archive exceeds max-entries", int64(w.lim.MaxEntries), false)
	}
	if err := checkZipHeaders(f, size, zr.File); err != nil {
		return err
	}
	for _, zf := range zr.File {
		mode := zf.Mode()
		dir := strings.HasSuffix(zf.Name, "/")
		switch {
		case zf.Flags&0x1 != 0:
			return fmt.Errorf("%w: entry %q is encrypted", ErrUnsafeArchive, zf.Name)
		case mode&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: entry %q is a symlink", ErrUnsafeArchive, zf.Name)
		case mode&(fs.ModeType&^fs.ModeDir) != 0:
			return fmt.Errorf("%w: entry %q is not a regular file or folder", ErrUnsafeArchive, zf.Name)
		}
		rel, err := w.entry(zf.Name, dir)
		if err != nil {
			return err
		}
		if dir {
			// A folder holds no data; a deflated one must still inflate to
			// nothing over exactly its listed bytes.
			if zf.UncompressedSize64 != 0 || zf.CompressedSize64 != 0 && zf.Method != zip.Deflate {
				return fmt.Errorf("%w: folder entry %q holds data", ErrUnsafeArchive, zf.Name)
			}
			if zf.CompressedSize64 != 0 {
				rc, err := openZipEntry(zf)
				if err == nil {
					_, err = io.Copy(io.Discard, rc)
					rc.Close()
				}
				if err != nil {
					return fmt.Errorf("%w: entry %q: %w", ErrUnsafeArchive, zf.Name, err)
				}
			}
			if w.sink != nil && rel != "" {
				if err := w.sink(w.top, rel, true, 0o755, nil); err != nil {
					return err
				}
			}
			continue
		}
		if zf.UncompressedSize64 > uint64(w.lim.MaxFileBytes) {
			return limitErr("entry exceeds max-file-size", w.lim.MaxFileBytes, true)
		}
		if zf.Method != zip.Store && zf.Method != zip.Deflate {
			return fmt.Errorf("%w: entry %q uses an unsupported compression method", ErrUnsafeArchive, zf.Name)
		}
		// The CRC-32 is checked, more bytes than declared are refused, and a
		// deflate stream must end where the entry's data ends.
		rc, err := openZipEntry(zf)
		if err != nil {
			return fmt.Errorf("%w: entry %q: %w", ErrUnsafeArchive, zf.Name, err)
		}
		err = w.file(rel, normMode(mode), rc, int64(zf.CompressedSize64))
		rc.Close()
		if err != nil {
			if errors.Is(err, zip.ErrChecksum) || errors.Is(err, zip.ErrFormat) || errors.Is(err, errShortDeflate) {
				return fmt.Errorf("%w: entry %q: %w", ErrUnsafeArchive, zf.Name, err)
			}
			return err
		}
	}
	return nil
}

func (w *walker) tarZst(f *os.File) error {
	zr, err := zstd.NewReader(bufio.NewReader(f), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
	if err != nil {
		return fmt.Errorf("%w: reading zstd: %w", ErrUnsafeArchive, err)
	}
	defer zr.Close()
	// Everything out of the decoder counts towards the whole-archive ratio
	// and total limits, tar headers and padding included.
	budget := min(w.lim.MaxTotalUnpacked, w.lim.MaxRatio*max(w.archiveSize, 1)) + 1<<20
	stream := &limitedReader{r: zr, n: budget}
	tr := tar.NewReader(stream)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if stream.n <= 0 {
			return w.streamLimit()
		}
		if err != nil {
			return fmt.Errorf("%w: reading tar: %w", ErrUnsafeArchive, err)
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				return fmt.Errorf("%w: entry %q is a sparse file", ErrUnsafeArchive, hdr.Name)
			}
		}
		var dir bool
		switch hdr.Typeflag {
		case tar.TypeReg: // archive/tar reports old TypeRegA entries as TypeReg
		case tar.TypeDir:
			dir = true
		case tar.TypeSymlink:
			return fmt.Errorf("%w: entry %q is a symlink", ErrUnsafeArchive, hdr.Name)
		case tar.TypeLink:
			return fmt.Errorf("%w: entry %q is a hard link", ErrUnsafeArchive, hdr.Name)
		case tar.TypeChar, tar.TypeBlock:
			return fmt.Errorf("%w: entry %q is a device", ErrUnsafeArchive, hdr.Name)
		case tar.TypeFifo:
			return fmt.Errorf("%w: entry %q is a FIFO", ErrUnsafeArchive, hdr.Name)
		case tar.TypeGNUSparse:
			return fmt.Errorf("%w: entry %q is a sparse file", ErrUnsafeArchive, hdr.Name)
		default:
			return fmt.Errorf("%w: entry %q is not a regular file or folder", ErrUnsafeArchive, hdr.Name)
		}
		name := hdr.Name
		if dir && !strings.HasSuffix(name, "/") {
			name += "/"
		}
		rel, err := w.entry(name, dir)
		if err != nil {
			return err
		}
		if dir {
			if w.sink != nil && rel != "" {
				if err := w.sink(w.top, rel, true, 0o755, nil); err != nil {
					return err
				}
			}
			continue
		}
		if hdr.Size > w.lim.MaxFileBytes || hdr.Size < 0 {
			return limitErr("entry exceeds max-file-size", w.lim.MaxFileBytes, true)
		}
		if err := w.file(rel, normMode(fs.FileMode(hdr.Mode)), tr, -1); err != nil {
			if stream.n <= 0 {
				return w.streamLimit()
			}
			return err
		}
	}
}

func (w *walker) streamLimit() error {
	if w.lim.MaxRatio*max(w.archiveSize, 1) < w.lim.MaxTotalUnpacked {
		return fmt.Errorf("%w: archive exceeds max-compression-ratio (%d:1)", ErrUnsafeArchive, w.lim.MaxRatio)
	}
	return limitErr("archive exceeds max-total-unpacked", w.lim.MaxTotalUnpacked, true)
}

var sumsLine = lazyre.New(`^([0-9a-f]{64})  (.+)$`)

// checkContent applies the content rules: SKILL.md passes the skill rules with
// the top folder as its folder name, and SHA256SUMS lists every file exactly.
func (w *walker) checkContent() error {
	if w.top == "" {
		return fmt.Errorf("%w: the archive is empty", ErrLayout)
	}
	if _, ok := w.files["SKILL.md"]; !ok {
		return fmt.Errorf("%w: %s/SKILL.md is missing", ErrLayout, w.top)
	}
	_, findings := CheckSkillMD(w.skillMD, w.top)
	for _, f := range findings {
		if f.Severity == SeverityError {
			return &FindingError{Finding: f}
		}
	}
	if !w.hasSums {
		return fmt.Errorf("%w: %s/%s is missing", ErrDigestMismatch, w.top, SumsFile)
	}
	if len(w.sums) == 0 || w.sums[len(w.sums)-1] != '\n' {
		return fmt.Errorf("%w: %s is malformed", ErrDigestMismatch, SumsFile)
	}
	listed := map[string]bool{}
	prev := ""
	for i, line := range strings.Split(strings.TrimSuffix(string(w.sums), "\n"), "\n") {
		m := sumsLine().FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("%w: %s line %d is malformed", ErrDigestMismatch, SumsFile, i+1)
		}
		if i > 0 && m[2] <= prev {
			return fmt.Errorf("%w: %s is not sorted (line %d)", ErrDigestMismatch, SumsFile, i+1)
		}
		prev = m[2]
		sum, ok := w.files[m[2]]
		if !ok {
			return fmt.Errorf("%w: %s lists %s, which is not in the archive", ErrDigestMismatch, SumsFile, m[2])
		}
		if hex.EncodeToString(sum[:]) != m[1] {
			return fmt.Errorf("%w: %s does not match %s", ErrDigestMismatch, m[2], SumsFile)
		}
		listed[m[2]] = true
	}
	var missing []string
	for rel := range w.files {
		if !listed[rel] {
			missing = append(missing, rel)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("%w: %s is not listed in %s", ErrDigestMismatch, missing[0], SumsFile)
	}
	return nil
}
