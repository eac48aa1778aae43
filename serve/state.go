package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/atomicfile"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

// The agent state directory (§7.1): every file is 0600 and written
// atomically; create-once files are published with a hard link.

// frozenOutcome is the public outcome frozen at termination (§7.4).
type frozenOutcome struct {
	Status           string          `json:"status"`
	ExecutionOutcome string          `json:"execution_outcome,omitempty"`
	EffectVerified   bool            `json:"effect_verified,omitempty"`
	MessageKey       string          `json:"message_key"`
	Summary          flowrun.Summary `json:"summary"`
}

// runRecord is runs/<run_id>.json. It holds no parameter values, URL, names
// or paths.
type runRecord struct {
	SchemaVersion       int            `json:"schema_version"`
	RunID               string         `json:"run_id"`
	WorkflowID          string         `json:"workflow_id"`
	BaseWorkflowID      string         `json:"base_workflow_id"`
	BundleContentDigest string         `json:"bundle_content_digest"`
	Owner               string         `json:"owner"`
	PID                 int            `json:"pid"`
	PGID                int            `json:"pgid"`
	LeaderStart         uint64         `json:"leader_start"`
	StartedAt           string         `json:"started_at"`
	EndedAt             *string        `json:"ended_at"`
	Phase               string         `json:"phase"`
	ExitCode            *int           `json:"exit_code"`
	Outcome             *frozenOutcome `json:"outcome"`
}

const (
	phaseRunning  = "running"
	phaseTerminal = "terminal"
)

type stateDir struct{ dir string }

func (d stateDir) recordPath(runID string) string {
	return filepath.Join(d.dir, "runs", runID+".json")
}

func (d stateDir) writeRecord(r *runRecord) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(d.recordPath(r.RunID), data, 0o600)
}

// readRecord reads a run record; runID must already match its pattern. Any
// failure (absent, symlinked, unreadable, malformed) is "no record".
func (d stateDir) readRecord(runID string) *runRecord {
	p := d.recordPath(runID)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<20 {
		return nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var r runRecord
	if json.Unmarshal(data, &r) != nil || r.RunID != runID || !workflowIDRE.MatchString(r.WorkflowID) {
		return nil
	}
	if r.Phase == phaseTerminal && r.Outcome == nil {
		return nil
	}
	return &r
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

func readRegular(p string, max int64) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, errors.New("not a regular file")
	}
	return os.ReadFile(p)
}

// createOnce publishes data at p only if p does not exist: the data is
// written and fsynced to a temp file, then hard-linked into place.
func createOnce(p string, data []byte) error {
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fs.ErrExist
		}
		return err
	}
	syncDir(dir)
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// binding is idem/<hmac>.json (§7.3).
type binding struct {
	Digest    string `json:"digest"`
	RunID     string `json:"run_id"`
	CreatedAt string `json:"created_at"`
}

type idempotency struct {
	dir stateDir
	key []byte
}

func (i *idempotency) mac(parts ...[]byte) string {
	h := hmac.New(sha256.New, i.key)
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (i *idempotency) path(key string) string {
	return filepath.Join(i.dir.dir, "idem", i.mac([]byte("key\x00"+key))+".json")
}

// digest is the binding digest over the canonical call (§7.3).
func (i *idempotency) digest(baseWorkflowID string, params map[string]string, url *string) string {
	// encoding/json sorts map keys, which is the canonical order here.
	doc := struct {
		V        int               `json:"v"`
		Tool     string            `json:"tool"`
		Workflow string            `json:"workflow"`
		Params   map[string]string `json:"params"`
		URL      *string           `json:"url"`
	}{1, "run", baseWorkflowID, params, url}
	b, _ := encodeJSON(doc, false)
	return i.mac(b)
}

var errBindingUnreadable = errors.New("idempotency binding unreadable")

// lookup returns the binding for key, or nil. A partial file is retried for
// up to 1 s (§7.3).
func (i *idempotency) lookup(key string) (*binding, error) {
	p := i.path(key)
	deadline := time.Now().Add(time.Second)
	for {
		data, err := readRegular(p, 4096)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err == nil {
			var b binding
			if json.Unmarshal(data, &b) == nil && runIDRE.MatchString(b.RunID) && b.Digest != "" {
				return &b, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errBindingUnreadable
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// publish binds key create-once. It returns fs.ErrExist when another call
// won the race.
func (i *idempotency) publish(key string, b binding) error {
	data, _ := json.Marshal(b)
	return createOnce(i.path(key), data)
}
