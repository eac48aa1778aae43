package fsutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Limit names an input kind and its size cap. The caps are listed in the
// README ("Input size caps"); change both together.
type Limit struct {
	// Kind is a short human name used in error messages ("ledger file").
	Kind string
	// Max is the largest accepted size in bytes.
	Max int64
}

// Size caps per input kind (README "Hostile machine: links, special files
// and size caps").
var (
	// Archive is a packed skill (.skill, .zip, .tar.zst); docs/skills.md,
	// Verify.
	Archive = Limit{"archive", 256 << 20}
	// Sidecar is an archive's .sha256 file: one "hex  name" line.
	Sidecar = Limit{"sidecar", 64 << 10}
	// LedgerFile is any file `ledger verify` reads (ledger, projection,
	// registry, object, receipt).
	LedgerFile = Limit{"ledger file", 64 << 20}
	// DeploymentConfig is `serve --config`.
	DeploymentConfig = Limit{"deployment config", 1 << 20}
	// WorkflowJSON is a bundle's workflow.json.
	WorkflowJSON = Limit{"workflow.json", 256 << 20}
	// Report is a run's report.json (docs/runs.md, Report status).
	Report = Limit{"report", 16 << 20}
	// SigstoreBundle is a detached sigstore bundle (.sigstore.json).
	SigstoreBundle = Limit{"sigstore bundle", 4 << 20}
	// TrustedRoot is a sigstore trusted_root.json.
	TrustedRoot = Limit{"trusted root", 4 << 20}
	// Key is a PEM public key.
	Key = Limit{"key", 64 << 10}
	// SkillMD is a SKILL.md file.
	SkillMD = Limit{"SKILL.md", 8 << 20}
	// LockFile is a skills lock file (skills-lock.json, .skill-lock.json).
	LockFile = Limit{"lock file", 16 << 20}
	// Labels is a `--labels` file.
	Labels = Limit{"--labels file", 64 << 10}
	// RunRecord is serve's <state>/runs/<run_id>.json (docs/runs.md, Run
	// records),
	// read by serve and `openadapt-agent runs` (internal/runstore).
	RunRecord = Limit{"run record", 64 << 10}
	// StderrTail is the kept tail of Flow's stderr,
	// <state>/runs/<run_id>.stderr (docs/runs.md, Run records): the TAIL is
	// kept, so a file never exceeds it. Equal to flowrun.StderrKeepBytes
	// (internal/runstore tests pin it).
	StderrTail = Limit{"Flow stderr tail", 64 << 10}
)

// Limits lists every cap, in README order.
var Limits = []Limit{Archive, Sidecar, LedgerFile, DeploymentConfig, WorkflowJSON, Report, SigstoreBundle, TrustedRoot, Key, SkillMD, LockFile, Labels, RunRecord, StderrTail}

// ErrNotRegular is returned (wrapped) for an input that is not a regular
// file: a FIFO, socket, device or directory.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned (wrapped in a [*TooLargeError]) for an input above
// its cap.
var ErrTooLarge = errors.New("input too large")

// ErrSymlink is returned (wrapped) when a no-follow open meets a symlink.
var ErrSymlink = errors.New("is a symbolic link")

// TooLargeError reports an input above its [Limit].
type TooLargeError struct {
	Limit Limit
	Size  int64 // the size seen (≥ Limit.Max+1 when read to the cap)
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s exceeds the %s limit of %s", e.Limit.Kind, e.Limit.Kind, FormatSize(e.Limit.Max))
}

// Unwrap makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// FormatSize renders n as "N MiB", "N KiB" or "N bytes".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// OpenOption changes how [Open] and [ReadFile] open a path.
type OpenOption int

const (
	// NoFollow refuses a final symbolic link ([ErrSymlink]) instead of
	// following it. Ancestors are still resolved; use [Root] for a path
	// beneath an untrusted folder.
	NoFollow OpenOption = 1 << iota
)

// Open opens path for reading if it is a regular file of at most lim.Max
// bytes. A FIFO, socket or device is refused with [ErrNotRegular] without
// blocking (the open is non-blocking and the type is checked on the opened
// descriptor, so a swap after a check cannot slip one in). The returned
// FileInfo is that of the opened file.
func Open(path string, lim Limit, opts ...OpenOption) (*os.File, fs.FileInfo, error) {
	var o OpenOption
	for _, x := range opts {
		o |= x
	}
	f, err := openRead(path, o&NoFollow != 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if fi.Size() > lim.Max {
		f.Close()
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: &TooLargeError{Limit: lim, Size: fi.Size()}}
	}
	return f, fi, nil
}

// OpenDir opens a folder to list it (ReadDir). Anything but a folder is
// refused at once (never blocks on a FIFO); links are followed.
func OpenDir(path string) (*os.File, error) { return openDir(path) }

// ReadFile reads a regular file of at most lim.Max bytes (see [Open]). The
// read stops with ctx's error as soon as ctx is canceled (checked between
// chunks), and a file that grows past the cap while being read is refused.
// A nil ctx means context.Background().
func ReadFile(ctx context.Context, path string, lim Limit, opts ...OpenOption) ([]byte, error) {
	f, fi, err := Open(path, lim, opts...)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readSized(ctx, f, fi.Size(), lim)
	if err != nil {
		var tl *TooLargeError
		if errors.As(err, &tl) {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return nil, err
	}
	return data, nil
}

// readSized reads the regular file f of stat'ed size (at most lim.Max),
// checking ctx between chunks, normally in one read: the buffer has one
// byte more than the size, and a regular file that returns fewer bytes
// than asked at or past its stat'ed size has reached its end, so no second
// read is needed to see EOF (ReadAll, for any reader, needs one). A file
// that grows past the cap while being read is refused.
func readSized(ctx context.Context, f *os.File, size int64, lim Limit) ([]byte, error) {
	return readBounded(ctx, f, size, true, lim)
}

// chunk is the read granularity between context checks.
const chunk = 1 << 20

// ReadAll reads r to EOF, at most lim.Max bytes, checking ctx between
// chunks. sizeHint (the stat'ed size, or 0) sizes the buffer.
func ReadAll(ctx context.Context, r io.Reader, sizeHint int64, lim Limit) ([]byte, error) {
	if sizeHint < 0 || sizeHint > lim.Max {
		sizeHint = lim.Max
	}
	return readBounded(ctx, r, sizeHint, false, lim)
}

// readBounded is the one bounded read loop behind readSized and ReadAll.
// size sizes the buffer; when exact (a regular file's stat'ed size), a
// short read at or past size is its end, so EOF needs no second read. A
// size of 0 may be unknown (procfs): read to EOF then.
func readBounded(ctx context.Context, r io.Reader, size int64, exact bool, lim Limit) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	buf := make([]byte, 0, size+1)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if int64(len(buf)) > lim.Max {
			return nil, &TooLargeError{Limit: lim, Size: int64(len(buf))}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		want := min(cap(buf), len(buf)+chunk) - len(buf)
		n, err := r.Read(buf[len(buf) : len(buf)+want])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF || (exact && err == nil && n < want && size > 0 && int64(len(buf)) >= size):
			if int64(len(buf)) > lim.Max {
				return nil, &TooLargeError{Limit: lim, Size: int64(len(buf))}
			}
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// CtxReader wraps r so that every Read first checks ctx: a long copy (a
// hash over an archive) stops promptly when ctx is canceled.
func CtxReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
