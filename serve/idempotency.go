package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Idempotency bindings (§7.3), in the agent state directory.

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
			if pyjson.Unmarshal(data, pyjson.Options{}, &b) == nil && flowrun.ValidRunID(b.RunID) && b.Digest != "" {
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
