package flowhelper

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Replay after close (docs/attended.md, "Replay after close"):
// attention.Decider reads (never writes) a run dir's
// attended_decisions.json to decide whether a retry is a byte-identical
// replay of a journaled decision; the answer itself always comes from Flow
// through attended.replay.

// RequestDigest is Flow's request_digest of an AttendedActionRequest: the
// sha256 of its canonical JSON (sorted keys, compact).
func RequestDigest(action, capabilityDigest, key string) string {
	b, _ := json.Marshal(struct {
		Action           string `json:"action"`
		CapabilityDigest string `json:"capability_digest"`
		Disposition      string `json:"disposition"`
		IdempotencyKey   string `json:"idempotency_key"`
	}{action, capabilityDigest, Dispositions[action], key})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Journaled is one decision of Flow's local decision projection.
type Journaled struct {
	IdempotencyKey   string `json:"idempotency_key"`
	RequestDigest    string `json:"request_digest"`
	CapabilityDigest string `json:"capability_digest"`
	Action           string `json:"action"`
	Status           string `json:"status"`
}

// Replayable reports whether j is a terminal decision of exactly this
// request (same key, action, disposition and capability digest).
func (j Journaled) Replayable(action, capabilityDigest, key string) bool {
	return j.IdempotencyKey == key && TerminalStatuses[j.Status] && j.RequestDigest == RequestDigest(action, capabilityDigest, key)
}

// journalLimit bounds the read of the decision projection.
var journalLimit = fsutil.Limit{Kind: "attended decision journal", Max: 8 << 20}

// LastJournaled returns the last decision journaled for key in run dir
// dir (no symlink followed, bounded read), or false.
func LastJournaled(ctx context.Context, dir, key string) (Journaled, bool) {
	data, err := fsutil.ReadFile(ctx, filepath.Join(dir, "attended_decisions.json"), journalLimit, fsutil.NoFollow)
	if err != nil {
		return Journaled{}, false
	}
	obj, err := parseObject(data)
	if err != nil {
		return Journaled{}, false
	}
	decisions := obj.get("decisions")
	if obj.d.Kind(decisions) != pyjson.Array {
		return Journaled{}, false
	}
	var (
		last  Journaled
		found bool
	)
	for v := range obj.d.Elems(decisions) {
		j, ok := journaled(object{obj.d, v})
		if !ok {
			return Journaled{}, false // a malformed projection is no evidence
		}
		if j.IdempotencyKey == key {
			last, found = j, true
		}
	}
	return last, found
}

// journaled reads one decision of the projection: an object whose known
// members are strings or null (absent or null: ""); other members are
// Flow's and ignored.
func journaled(o object) (Journaled, bool) {
	var j Journaled
	if o.d.Kind(o.v) != pyjson.Object {
		return j, false
	}
	for _, f := range []struct {
		k   string
		dst *string
	}{{"idempotency_key", &j.IdempotencyKey}, {"request_digest", &j.RequestDigest},
		{"capability_digest", &j.CapabilityDigest}, {"action", &j.Action}, {"status", &j.Status}} {
		var ok bool
		if *f.dst, _, ok = o.strOrNull(f.k); !ok && o.has(f.k) {
			return Journaled{}, false
		}
	}
	return j, true
}
