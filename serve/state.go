package serve

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// The agent state directory (§7.1): run records, owner locks and the
// reconciliation of dead owners' runs at startup. Every file is 0600 and
// written atomically; create-once files are published with a hard link.

// runRecord is runs/<run_id>.json, internal/runstore's one definition of
// the record (serve writes it, `openadapt-agent runs` reads it).
type runRecord = runstore.File

type stateDir struct{ dir string }

func (d stateDir) recordPath(runID string) string {
	return filepath.Join(d.dir, "runs", runID+".json")
}

func (d stateDir) writeRecord(r *runRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return fsutil.WriteFile(d.recordPath(r.RunID), data, 0o600)
}

// readRecord reads a run record; runID must already match its pattern. Any
// failure (absent, symlinked, not regular, above the run-record cap,
// writable by others, malformed) is "no record". The read is the shared
// bounded no-follow one of internal/runstore, which `openadapt-agent runs`
// uses too.
func (d stateDir) readRecord(runID string) *runRecord {
	data, err := runstore.ReadRecordFile(context.Background(), d.dir, runID)
	if err != nil {
		return nil
	}
	r, err := runstore.ParseFile(data, runID)
	if err != nil {
		return nil
	}
	return r
}

// idemKey loads or creates idem.key (32 random bytes, created once).
func (d stateDir) idemKey() ([]byte, error) {
	p := filepath.Join(d.dir, "idem.key")
	for range 50 {
		if data, err := readRegular(p, 64); err == nil {
			if len(data) == 32 {
				return data, nil
			}
			// A concurrent creator has not finished; retry below.
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := createOnce(p, key); err == nil {
			return key, nil
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, errors.New("idempotency key unavailable")
}

// readRegular reads a state file: a regular file of at most max bytes,
// never through a final symlink, without blocking on a FIFO
// (internal/util/fsutil's bounded read).
func readRegular(p string, max int64) ([]byte, error) {
	return fsutil.ReadFile(context.Background(), p, fsutil.Limit{Kind: "state file", Max: max}, fsutil.NoFollow)
}

// createOnce publishes data (0600) at p only if p does not exist
// (fsutil.CreateFile: a fsynced temporary hard-linked into place, never
// through a link, pending for the signal backstop while it exists). It
// returns an error wrapping fs.ErrExist when p exists.
func createOnce(p string, data []byte) error {
	if err := fsutil.CreateFile(p, data, 0o600); err != nil {
		return err
	}
	syncDir(filepath.Dir(p))
	return nil
}

func syncDir(dir string) {
	if d, err := fsutil.OpenDir(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// owner locks (§7.1)

func (s *Server) ownerPath(id string) string {
	return filepath.Join(s.state.dir, "owners", id+".lock")
}

func (s *Server) acquireOwner() error {
	f, err := os.OpenFile(s.ownerPath(s.instance), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return err
	}
	s.ownerFile = f
	return nil
}

func (s *Server) releaseOwner() {
	if s.ownerFile != nil {
		os.Remove(s.ownerFile.Name())
		s.ownerFile.Close()
		s.ownerFile = nil
	}
}

// ownerAlive reports whether the instance id still holds its owner lock.
func (s *Server) ownerAlive(id string) bool {
	if id == s.instance {
		return true
	}
	if !runstore.ValidOwner(id) {
		return false
	}
	return ownerLocked(s.ownerPath(id))
}

// reconcile marks running records of dead owners interrupted and, on Linux,
// terminates their orphaned process groups (§7.4).
func (s *Server) reconcile() {
	ents, err := os.ReadDir(filepath.Join(s.state.dir, "runs"))
	if err != nil {
		return
	}
	for _, e := range ents {
		runID, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !flowrun.ValidRunID(runID) {
			continue
		}
		r := s.state.readRecord(runID)
		if r == nil || r.Phase != runstore.PhaseRunning || s.ownerAlive(r.Owner) {
			continue
		}
		flowrun.TerminateOrphan(flowrun.Process{PID: r.PID, PGID: r.PGID, StartTime: r.LeaderStart}, 2*time.Second)
		r.Freeze(interrupted, time.Now())
		_ = s.state.writeRecord(r)
	}
	// Remove owner files of dead instances.
	owners, _ := os.ReadDir(filepath.Join(s.state.dir, "owners"))
	for _, o := range owners {
		id, ok := strings.CutSuffix(o.Name(), ".lock")
		if ok && id != s.instance && !ownerLocked(s.ownerPath(id)) {
			os.Remove(s.ownerPath(id))
		}
	}
}
