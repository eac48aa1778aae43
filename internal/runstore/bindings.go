package runstore

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Idempotency bindings: a run call with an idempotency_key binds the key to
// the run it started, create-once, in <state>/idem/<mac>.json, where mac is
// an HMAC of the key under <state>/idem.key (32 random bytes, created once
// per state folder), so a file name never reveals a key. A binding holds
// the digest of the call it was made for, so a retry with another call
// under the same key is told apart (docs/runs.md "Idempotency").

// Binding is one idempotency binding as stored.
type Binding struct {
	Digest    string `json:"digest"`
	RunID     string `json:"run_id"`
	CreatedAt string `json:"created_at"`
}

// Bindings are the idempotency bindings of a state folder.
type Bindings struct {
	dir string // <state>/idem
	key []byte
}

// ErrBindingUnreadable is returned by [Bindings.Lookup] for a binding file
// that exists but stays unusable.
var ErrBindingUnreadable = errors.New("idempotency binding unreadable")

// ErrBindingKey is returned by [State.Bindings] when idem.key can be
// neither read nor created.
var ErrBindingKey = errors.New("idempotency key unavailable")

// bindingReadGrace bounds how long [Bindings.Lookup] retries a binding
// file it cannot use: only another process can leave one half-written
// (this package publishes bindings whole), so this wait polls.
const bindingReadGrace = time.Second

// Bindings loads or creates the state folder's idem.key. The key is
// created once with a hard link, so it is either absent or whole: when
// another server creates it first, its key is read and used. A key file
// that is not this user's own (fsutil.CheckOurs) is refused with an error
// naming it and the fix, never used or replaced.
func (s *State) Bindings() (*Bindings, error) {
	p := filepath.Join(s.dir, "idem.key")
	// read waits (polls) up to bindingReadGrace for a key file that
	// another server is still publishing by a hard link.
	read := func() ([]byte, error) {
		deadline := time.Now().Add(bindingReadGrace)
		for {
			data, err := readState(p, 64)
			if err == nil && len(data) != 32 {
				err = errors.New("not a 32-byte key")
			}
			var ne *fsutil.NotOursError
			if !errors.As(err, &ne) || !ne.Linked || time.Now().After(deadline) {
				return data, err
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	refused := func(err error) (*Bindings, error) {
		if errors.Is(err, fsutil.ErrNotOurs) {
			// Planted before the folder was made private: never adopted.
			return nil, fmt.Errorf("%w: %w", ErrBindingKey, err)
		}
		return nil, ErrBindingKey
	}
	key, err := read()
	switch {
	case err == nil:
		return &Bindings{dir: filepath.Join(s.dir, "idem"), key: key}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return refused(err)
	}
	key = make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	err = createOnce(p, key)
	if errors.Is(err, fs.ErrExist) {
		// Another server published its key between the read and ours.
		if key, err = read(); err != nil {
			return refused(err)
		}
	} else if err != nil {
		return nil, ErrBindingKey
	}
	return &Bindings{dir: filepath.Join(s.dir, "idem"), key: key}, nil
}

// notOurs reports a file that is not this user's own for a reason other
// than a second hard link (which a file being published has for a moment).
func notOurs(err error) bool {
	var ne *fsutil.NotOursError
	return errors.As(err, &ne) && !ne.Linked
}

func (b *Bindings) mac(data []byte) string {
	h := hmac.New(sha256.New, b.key)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

func (b *Bindings) path(key string) string {
	return filepath.Join(b.dir, b.mac([]byte("key\x00"+key))+".json")
}

// Digest is the binding digest of a run call: an HMAC of the canonical
// JSON {"v":1,"tool":"run","workflow":…,"params":{…},"url":…} (keys
// sorted, no HTML escaping), so two calls differ in digest exactly when
// their workflow (base id), parameters or URL override differ.
func (b *Bindings) Digest(baseWorkflowID string, params map[string]string, url *string) string {
	doc := struct {
		V        int               `json:"v"`
		Tool     string            `json:"tool"`
		Workflow string            `json:"workflow"`
		Params   map[string]string `json:"params"`
		URL      *string           `json:"url"`
	}{1, "run", baseWorkflowID, params, url}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // strings and a map of strings always encode
	return b.mac(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Lookup returns the binding of key, or nil when the key is not bound. A
// binding file that cannot be used is retried for up to a second (another
// process may still be writing it, or publishing it by a hard link), then
// [ErrBindingUnreadable]; one that is not this user's own for another
// reason (owner, mode) is [ErrBindingUnreadable] at once.
func (b *Bindings) Lookup(key string) (*Binding, error) {
	p := b.path(key)
	deadline := time.Now().Add(bindingReadGrace)
	for {
		data, err := readState(p, 4096)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if notOurs(err) {
			// Planted, not half-written: no writer to wait for.
			return nil, fmt.Errorf("%w: %w", ErrBindingUnreadable, err)
		}
		if err == nil {
			var bd Binding
			if pyjson.Unmarshal(data, pyjson.Options{Closed: true}, &bd) == nil && flowrun.ValidRunID(bd.RunID) && bd.Digest != "" {
				return &bd, nil
			}
		}
		if time.Now().After(deadline) {
			if errors.Is(err, fsutil.ErrNotOurs) {
				return nil, fmt.Errorf("%w: %w", ErrBindingUnreadable, err)
			}
			return nil, ErrBindingUnreadable
		}
		// Polling is right here: the writer is another process.
		time.Sleep(25 * time.Millisecond)
	}
}

// Publish binds key to bd, create-once. It returns an error wrapping
// fs.ErrExist when the key is already bound (another call won the race).
func (b *Bindings) Publish(key string, bd Binding) error {
	data, err := json.Marshal(bd)
	if err != nil {
		return err
	}
	return createOnce(b.path(key), data)
}
