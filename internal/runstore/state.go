package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// State is the state directory as the server that runs Flow sees it: it
// writes run records and kept stderr tails, holds its owner lock, marks the
// runs of dead owners interrupted and keeps idempotency bindings. A
// read-only server uses the same type to read records and writes nothing.
//
// Every file is 0600 and written atomically (temp then rename); a file
// created once (idem.key, a binding) is published with a hard link, so a
// reader never sees it half-written. A file read back must be this user's
// own (fsutil.CheckOurs): one planted before the folder was made private is
// refused, never adopted. The layout beside [Store]'s:
//
//	<state>/runs/<run_id>.json     the run record ([File])
//	<state>/runs/<run_id>.stderr   the kept tail of Flow's stderr
//	<state>/owners/<owner>.lock    a live server's owner lock (flock)
//	<state>/idem.key, idem/<mac>.json   idempotency bindings ([Bindings])
//	<state>/tmp/                   Flow's parameter files
type State struct {
	runsDir string
	dir     string
	owner   string
	lock    *os.File
}

// stateSubdirs are the folders [Prepare] creates inside the state folder.
var stateSubdirs = []string{"runs", "idem", "tmp", "owners"}

// PrepareError is a runs folder [Prepare] could not make ready: it could
// not be created, is a link or not a folder, or the state folder inside it
// is. Path is the runs folder (absolute when it could be made so).
type PrepareError struct {
	Path string
	Err  error
}

func (e *PrepareError) Error() string {
	return "preparing the runs directory " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *PrepareError) Unwrap() error { return e.Err }

// Prepare readies runsDir for a server that runs Flow: the runs folder is
// created 0700 when missing and must not be a link; the state folder and
// its subfolders are created; every one of them that already exists is
// tightened to 0700 when this user owns it. It returns the [State] of the
// absolute runs folder (no owner lock yet: [State.Lock]).
//
// A folder owned by another user is an [*UnsafeDirError]; anything else
// that stops it is a [*PrepareError].
func Prepare(runsDir string) (*State, error) {
	abs, err := filepath.Abs(runsDir)
	if err != nil {
		return nil, &PrepareError{Path: runsDir, Err: err}
	}
	bad := func(err error) (*State, error) { return nil, &PrepareError{Path: abs, Err: err} }
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, 0o700); err != nil {
			return bad(err)
		}
	case err != nil:
		return bad(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return bad(errors.New("is a symbolic link"))
	case !fi.IsDir():
		return bad(errors.New("is not a folder"))
	}
	if fi, err := os.Lstat(abs); err != nil || tighten(abs, fi) != nil {
		return nil, &UnsafeDirError{Path: abs, Reason: reasonNotOurs}
	}
	state := filepath.Join(abs, StateDirName)
	if fi, err := os.Lstat(state); err == nil && (fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir()) {
		return bad(errors.New("its state folder is a symbolic link or not a folder"))
	}
	for _, sub := range append([]string{""}, stateSubdirs...) {
		d := filepath.Join(state, sub)
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return bad(err)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return bad(err)
		}
		if !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
			return bad(errors.New("a state folder is a symbolic link or not a folder"))
		}
		// A pre-existing state folder is tightened to 0700 (ours) or refused.
		if tighten(d, fi) != nil {
			return nil, &UnsafeDirError{Path: d, Reason: reasonNotOurs}
		}
	}
	return &State{runsDir: abs, dir: state}, nil
}

// reasonNotOurs is the [UnsafeDirError] reason of a folder [Prepare] may
// not tighten.
const reasonNotOurs = "is accessible to other users and not owned by this user"

// ReadOnly is the [State] of a server that writes nothing: it checks
// runsDir as [CheckRunsDir] does, never changing it, and only reads
// records. A missing runs folder is fine (it has no runs yet).
func ReadOnly(runsDir string) (*State, error) {
	abs, err := filepath.Abs(runsDir)
	if err != nil {
		return nil, &PrepareError{Path: runsDir, Err: err}
	}
	if err := CheckRunsDir(abs); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &State{runsDir: abs, dir: filepath.Join(abs, StateDirName)}, nil
}

// Unreadable is the [State] of a read-only server whose runs folder could
// not be determined or read: it has no folders at all, so it reads nothing
// (never a path relative to the working folder) and holds no runs.
func Unreadable() *State { return &State{} }

// RunsDir is the runs folder (absolute).
func (s *State) RunsDir() string { return s.runsDir }

// Dir is the state folder, <runs-dir>/.openadapt-agent.
func (s *State) Dir() string { return s.dir }

// ParamsDir is the folder of Flow's parameter files.
func (s *State) ParamsDir() string { return filepath.Join(s.dir, "tmp") }

func (s *State) recordPath(runID string) string {
	return filepath.Join(s.dir, "runs", runID+".json")
}

// WriteRecord replaces the record of f.RunID (which must match its
// pattern) with f.
func (s *State) WriteRecord(f *File) error {
	if !flowrun.ValidRunID(f.RunID) {
		return ErrInvalidRunID
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return fsutil.WriteFile(s.recordPath(f.RunID), data, 0o600)
}

// Record reads the record of runID, or nil. Any failure (absent, a link,
// not a regular file, above [fsutil.RunRecord], writable by others,
// malformed) is "no record": the read is [Store.Get]'s bounded no-follow
// one.
func (s *State) Record(runID string) *File {
	if s.dir == "" {
		return nil // Unreadable
	}
	data, err := readRecordFile(context.Background(), s.dir, runID)
	if err != nil {
		return nil
	}
	f, err := ParseFile(data, runID)
	if err != nil {
		return nil
	}
	return f
}

// WriteStderrTail replaces runID's kept stderr tail with data (the tail of
// Flow's stderr, at most [fsutil.StderrTail] bytes). It is for the local
// operator (`openadapt-agent runs show --protected`): no MCP result, audit
// line or log line ever reads it. The state folder is the server's own
// (prepared 0700, not a link); a link at the file itself is replaced,
// never followed.
func (s *State) WriteStderrTail(runID string, data []byte) error {
	if !flowrun.ValidRunID(runID) {
		return ErrInvalidRunID
	}
	return fsutil.WriteFile(filepath.Join(s.dir, "runs", runID+".stderr"), data, 0o600)
}

// Owner locks: a server instance holds <state>/owners/<owner>.lock open
// and locked for its lifetime, so another server can tell whether the
// owner of a running record is still alive.

func (s *State) ownerPath(id string) string {
	return filepath.Join(s.dir, "owners", id+".lock")
}

// Lock takes the owner lock of instance owner (a [ValidOwner] id) for this
// process; [State.Unlock] releases it.
func (s *State) Lock(owner string) error {
	if !ValidOwner(owner) {
		return errors.New("not a server instance id")
	}
	f, err := os.OpenFile(s.ownerPath(owner), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	s.owner, s.lock = owner, f
	return nil
}

// Unlock removes and releases the owner lock; it is safe to call more than
// once, and without a lock.
func (s *State) Unlock() {
	if s.lock != nil {
		os.Remove(s.lock.Name())
		s.lock.Close()
		s.lock = nil
	}
}

// Owner is the instance id of the lock this State holds ("" for none).
func (s *State) Owner() string { return s.owner }

// OwnerAlive reports whether the instance id still holds its owner lock
// (this State's own owner always does).
func (s *State) OwnerAlive(id string) bool {
	if id != "" && id == s.owner {
		return true
	}
	if !ValidOwner(id) {
		return false
	}
	return ownerLocked(s.ownerPath(id))
}

// Reconcile freezes every running record whose owner is dead with
// interrupted and terminates its orphaned process group (Linux; SIGTERM,
// then SIGKILL after 2 s), then removes the lock files of dead instances.
// A terminal record is never changed ([File.Freeze]). Then it removes
// the parameter files of runs that are not running under a live owner.
func (s *State) Reconcile(interrupted Outcome) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "runs"))
	if err == nil {
		for _, e := range ents {
			runID, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || !flowrun.ValidRunID(runID) {
				continue
			}
			r := s.Record(runID)
			if r == nil || r.Phase != PhaseRunning || s.OwnerAlive(r.Owner) {
				continue
			}
			flowrun.TerminateOrphan(flowrun.Process{PID: r.PID, PGID: r.PGID, StartTime: r.LeaderStart}, 2*time.Second)
			r.Freeze(interrupted, time.Now())
			_ = s.WriteRecord(r)
		}
	}
	owners, _ := os.ReadDir(filepath.Join(s.dir, "owners"))
	for _, o := range owners {
		id, ok := strings.CutSuffix(o.Name(), ".lock")
		if ok && id != s.owner && !ownerLocked(s.ownerPath(id)) {
			os.Remove(s.ownerPath(id))
		}
	}
	_, _ = flowrun.SweepParamsFiles(s.ParamsDir(), func(runID string) bool {
		r := s.Record(runID)
		return r != nil && r.Phase == PhaseRunning && r.Owner != s.owner && s.OwnerAlive(r.Owner)
	})
}

// RemoveParams deletes the parameter file of runID, if any.
func (s *State) RemoveParams(runID string) error {
	return flowrun.RemoveParamsFile(filepath.Join(s.ParamsDir(), flowrun.ParamsFileName(runID)))
}

// readState reads a small state file: a regular file of at most max bytes,
// never through a final link, without blocking on a FIFO, and this user's
// own (a file planted before the folder was made private is refused with
// an error wrapping [fsutil.ErrNotOurs]).
func readState(p string, max int64) ([]byte, error) {
	return fsutil.ReadOurs(context.Background(), p, fsutil.Limit{Kind: "state file", Max: max})
}

// createOnce publishes data (0600) at p only if p does not exist
// ([fsutil.CreateFile]: a fsynced temporary hard-linked into place, never
// through a link). It returns an error wrapping fs.ErrExist when p exists.
func createOnce(p string, data []byte) error {
	if err := fsutil.CreateFile(p, data, 0o600); err != nil {
		return err
	}
	if d, err := fsutil.OpenDir(filepath.Dir(p)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
