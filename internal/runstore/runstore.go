// Package runstore owns the run state of `openadapt-agent serve`: the one
// place that knows the state directory's layout and file formats. Serve
// writes through a [State] (run records, kept stderr tails, owner locks,
// idempotency [Bindings], the reconciliation of dead owners' runs);
// `openadapt-agent runs list|show` and the safety check of `attention
// list` read through a [Store]. The layout is
//
//	<runs-dir>/                     Flow's run folders, <run_id>/report.json
//	<runs-dir>/.openadapt-agent/    the state directory (0700)
//	    runs/<run_id>.json          the run record ([File])
//	    runs/<run_id>.stderr        the kept tail of Flow's stderr (0600, at
//	                                most [fsutil.StderrTail] bytes)
//	    owners/<owner>.lock         a live server's owner lock
//	    idem.key, idem/<mac>.json   idempotency bindings
//	    tmp/                        Flow's parameter files
//
// Reading is hostile-machine safe: [Open] refuses a runs or state folder
// that is a symbolic link, not a folder, writable by other users or owned
// by another user ([*UnsafeDirError]) and never changes it (a read-only
// command does not tighten folders; [Prepare], for the server that runs
// Flow, does); every read goes through an [fsutil.Root] on the runs
// folder, so no link beneath it is followed, a FIFO or device is refused
// before it is read, and each file is capped ([fsutil.RunRecord],
// [fsutil.StderrTail]). A [Record] holds validated values only: a field
// that does not match its pattern makes the record unreadable rather than
// reaching output. docs/runs.md describes run outcomes and the record.
//
// Stable API: everything exported here.
package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// StateDirName is the state directory's name inside the runs folder.
const StateDirName = ".openadapt-agent"

// stateRuns is the run-record folder relative to the runs folder.
const stateRuns = StateDirName + "/runs"

// MaxListed bounds how many run records [Store.List] reads; a folder with
// more entries is listed partially ([Listing.Truncated]).
const MaxListed = 10000

// maxNames bounds how many directory entries List looks at.
const maxNames = 4 * MaxListed

// testOnlyMaxListed is [MaxListed], lowered by tests.
var testOnlyMaxListed = MaxListed

var (
	// ErrNoRunsDir is returned (wrapping fs.ErrNotExist) by [Open] when the
	// runs folder does not exist.
	ErrNoRunsDir = fmt.Errorf("the runs directory does not exist: %w", fs.ErrNotExist)
	// ErrUnsafeDir is wrapped by every [*UnsafeDirError].
	ErrUnsafeDir = errors.New("unsafe runs or state directory")
	// ErrInvalidRunID is returned for an id that is not run-<24 hex>.
	ErrInvalidRunID = errors.New("not a run id (run- and 24 lowercase hex digits)")
	// ErrNotFound is returned when no run record exists for a valid id.
	ErrNotFound = errors.New("no run record")
	// ErrUnreadable is wrapped when a run record or stderr file exists but
	// cannot be used: a link, not a regular file, too large, writable by
	// others, or malformed.
	ErrUnreadable = errors.New("unreadable")
)

// UnsafeDirError reports a runs or state folder a read-only command refuses.
type UnsafeDirError struct {
	Path   string
	Reason string // "is a symbolic link", "is writable by other users (mode 0777)", …
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("refusing to read %s: it %s", e.Path, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnsafeDir) true.
func (e *UnsafeDirError) Unwrap() error { return ErrUnsafeDir }

// Store is an opened runs folder.
type Store struct {
	dir      string
	root     *fsutil.Root
	hasState bool
}

// Open opens the runs folder dir (made absolute) for reading after
// [CheckRunsDir]. A missing folder gives an error wrapping [ErrNoRunsDir];
// a runs folder without a state directory is a Store with no runs.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, hasState, err := check(abs)
	if err != nil {
		return nil, err
	}
	return &Store{dir: abs, root: root, hasState: hasState}, nil
}

// CheckRunsDir applies [Open]'s checks to the runs folder dir and, when
// present, its state directory and run-record folder, then releases it:
// nil, an error wrapping [ErrNoRunsDir], or an [*UnsafeDirError].
func CheckRunsDir(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	root, _, err := check(abs)
	if err != nil {
		return err
	}
	return root.Close()
}

// check validates the runs folder and its state folders, top-down: once a
// folder is known to be ours and writable by us alone, nothing beneath it
// can be swapped by another user.
func check(abs string) (*fsutil.Root, bool, error) {
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("%w: %s", ErrNoRunsDir, abs)
	case err != nil:
		return nil, false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, false, &UnsafeDirError{Path: abs, Reason: "is a symbolic link"}
	case !fi.IsDir():
		return nil, false, &UnsafeDirError{Path: abs, Reason: "is not a folder"}
	}
	root, err := fsutil.OpenRoot(abs, abs)
	if err != nil {
		return nil, false, err
	}
	fail := func(err error) (*fsutil.Root, bool, error) {
		root.Close()
		return nil, false, err
	}
	// The opened folder itself is checked (not only the path lstat'ed above),
	// so a swap between the two cannot slip in another folder.
	if fi, err := root.Lstat("."); err != nil {
		return fail(err)
	} else if err := private(abs, fi); err != nil {
		return fail(err)
	}
	for _, rel := range []string{StateDirName, stateRuns} {
		p := filepath.Join(abs, filepath.FromSlash(rel))
		fi, err := root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return root, false, nil
		case errors.Is(err, fsutil.ErrSymlink):
			return fail(&UnsafeDirError{Path: p, Reason: "is a symbolic link"})
		case err != nil:
			return fail(err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return fail(&UnsafeDirError{Path: p, Reason: "is a symbolic link"})
		case !fi.IsDir():
			return fail(&UnsafeDirError{Path: p, Reason: "is not a folder"})
		}
		if err := private(p, fi); err != nil {
			return fail(err)
		}
	}
	return root, true, nil
}

// Close releases the store.
func (s *Store) Close() error { return s.root.Close() }

// Dir is the runs folder (absolute).
func (s *Store) Dir() string { return s.dir }

// Listing is the result of [Store.List].
type Listing struct {
	// Runs are the readable records, newest first (by started_at, then id).
	Runs []*Record
	// Unreadable counts run-record files that exist but cannot be used.
	Unreadable int
	// Truncated is true when the folder held more than [MaxListed] records
	// or too many entries to look at; the newest of those read are listed.
	Truncated bool
}

// List reads every run record of the store (at most [MaxListed]).
func (s *Store) List(ctx context.Context) (*Listing, error) {
	l := &Listing{}
	if !s.hasState {
		return l, nil
	}
	d, err := s.root.OpenFile(stateRuns, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	for len(names) < maxNames {
		batch, err := d.Readdirnames(1024)
		names = append(names, batch...)
		if err != nil {
			break
		}
	}
	if len(names) >= maxNames {
		l.Truncated = true
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(n, ".json")
		if !ok || !flowrun.ValidRunID(id) {
			continue
		}
		if len(l.Runs)+l.Unreadable >= testOnlyMaxListed {
			l.Truncated = true
			break
		}
		r, err := s.read(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			// Removed since the listing.
		case err != nil:
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			l.Unreadable++
		default:
			l.Runs = append(l.Runs, r)
		}
	}
	sort.SliceStable(l.Runs, func(i, j int) bool {
		a, b := l.Runs[i], l.Runs[j]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.After(b.StartedAt)
		}
		return a.RunID < b.RunID
	})
	return l, nil
}

// Get reads the record of run id: [ErrInvalidRunID] for a malformed id
// (decided from the string alone: a path separator never reaches the file
// system), [ErrNotFound], or an error wrapping [ErrUnreadable].
func (s *Store) Get(ctx context.Context, id string) (*Record, error) {
	if !flowrun.ValidRunID(id) {
		return nil, ErrInvalidRunID
	}
	if !s.hasState {
		return nil, ErrNotFound
	}
	return s.read(ctx, id)
}

func (s *Store) read(ctx context.Context, id string) (*Record, error) {
	data, err := s.readFile(ctx, stateRuns+"/"+id+".json", fsutil.RunRecord)
	if err != nil {
		return nil, err
	}
	r, err := parseRecord(data, id)
	if err != nil {
		return nil, fmt.Errorf("run record %s: %w: %w", id, ErrUnreadable, err)
	}
	return r, nil
}

// Stderr returns the kept tail of Flow's stderr for run id: kept is false
// when the run has none (a run that never started, or one recorded before
// this build kept tails). A link, FIFO, oversized or foreign-writable file
// is an error wrapping [ErrUnreadable].
func (s *Store) Stderr(ctx context.Context, id string) (data []byte, kept bool, err error) {
	if !flowrun.ValidRunID(id) {
		return nil, false, ErrInvalidRunID
	}
	if !s.hasState {
		return nil, false, nil
	}
	data, err = s.readFile(ctx, stateRuns+"/"+id+".stderr", fsutil.StderrTail)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// ReportPath returns <runs-dir>/<id>/report.json when Flow's report is a
// regular file there (reached without following a link), else "".
func (s *Store) ReportPath(id string) string {
	if !flowrun.ValidRunID(id) {
		return ""
	}
	fi, err := s.root.Lstat(id + "/report.json")
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return filepath.Join(s.dir, id, "report.json")
}

// readFile reads rel beneath the runs folder: no link anywhere, a regular
// file of at most lim bytes, this user's own ([fsutil.CheckOurs]). A missing
// file is [ErrNotFound]; anything else unusable wraps [ErrUnreadable].
func (s *Store) readFile(ctx context.Context, rel string, lim fsutil.Limit) ([]byte, error) {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	unreadable := func(why string) error { return fmt.Errorf("%s: %w: %s", base, ErrUnreadable, why) }
	f, err := s.root.OpenFile(rel, os.O_RDONLY, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNotFound
	case errors.Is(err, fsutil.ErrSymlink):
		return nil, unreadable("is a symbolic link")
	case errors.Is(err, fsutil.ErrNotRegular):
		return nil, unreadable("is not a regular file")
	case err != nil:
		return nil, unreadable("cannot be opened")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, unreadable("cannot be opened")
	}
	if !fi.Mode().IsRegular() {
		return nil, unreadable("is not a regular file")
	}
	if fi.Size() > lim.Max {
		return nil, unreadable("exceeds the " + lim.Kind + " limit of " + fsutil.FormatSize(lim.Max))
	}
	// A file another user could have planted (another owner, a second
	// hard link, a group or other write bit) is never adopted.
	var ne *fsutil.NotOursError
	if errors.As(fsutil.CheckOurs(s.root.Join(rel), fi), &ne) {
		return nil, unreadable(ne.Reason + "; fix: " + ne.Fix)
	}
	data, err := fsutil.ReadAll(ctx, f, fi.Size(), lim)
	var tl *fsutil.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, unreadable("exceeds the " + lim.Kind + " limit of " + fsutil.FormatSize(lim.Max))
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, unreadable("cannot be read")
	}
	return data, nil
}

// readRecordFile reads the raw record of run id from stateDir/runs with
// the same bounded, no-follow read as [Store.Get]: a link, FIFO, device, a
// file above [fsutil.RunRecord] or one others can write is an error
// wrapping [ErrUnreadable]; a missing one is [ErrNotFound].
func readRecordFile(ctx context.Context, stateDir, id string) ([]byte, error) {
	if !flowrun.ValidRunID(id) {
		return nil, ErrInvalidRunID
	}
	root, err := fsutil.OpenRoot(filepath.Join(stateDir, "runs"), "")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return (&Store{root: root}).readFile(ctx, id+".json", fsutil.RunRecord)
}
