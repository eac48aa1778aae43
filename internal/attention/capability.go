package attention

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

var (
	knownActions        = map[string]bool{"continue": true, "skip": true, "reject": true, "teach": true, "escalate": true, "reconcile": true}
	knownDeliveryStates = map[string]bool{"not_delivered": true, "delivered": true, "unknown": true}
)

// capabilitySummary returns the public summary of dir/attended_capability.json
// when its signature verifies with dir/.attended_capability.key, else nil
// (flow-run.md §8.2, mcp-surface.md §6.7 "capability").
func capabilitySummary(dir string) *Capability {
	c, err := loadCapability(dir)
	if err != nil || !c.valid {
		return nil
	}
	sum := &Capability{Digest: c.digest}
	var ok bool
	if sum.ExpiresAt, ok = str(c.obj["expires_at"]); !ok {
		return nil
	}
	var actions []json.RawMessage
	if json.Unmarshal(c.obj["allowed_actions"], &actions) != nil {
		return nil
	}
	sum.AllowedActions = make([]string, 0, len(actions))
	for _, a := range actions {
		s, ok := str(a)
		if !ok || !knownActions[s] {
			return nil
		}
		sum.AllowedActions = append(sum.AllowedActions, s)
	}
	if sum.DeliveryState, ok = str(c.obj["delivery_state"]); !ok || !knownDeliveryStates[sum.DeliveryState] {
		return nil
	}
	switch string(c.obj["source_identity_required"]) {
	case "true":
		sum.SourceIdentityRequired = true
	case "false", "":
	default:
		return nil
	}
	if si, ok := flowrun.ParseObject(c.obj["source_identity"]); ok {
		if s, ok := str(si["status"]); ok {
			sum.SourceIdentityStatus = &s
		}
	}
	return sum
}

// capability is a parsed attended_capability.json with its digests.
type capability struct {
	obj map[string]json.RawMessage
	// digest is "sha256:" + hex SHA-256 of the canonical unsigned object:
	// the public, non-authorizing id MCP callers echo back.
	digest string
	// valid: the signature equals "hmac-sha256:" + hex HMAC-SHA256 under the
	// run's key.
	valid bool
}

// loadCapability reads and verifies the capability of a run directory.
// The key must be a regular 32-byte file without group or other permission
// bits, as Flow requires.
func loadCapability(dir string) (*capability, error) {
	data, err := readRegular(filepath.Join(dir, "attended_capability.json"), maxCapability)
	if err != nil {
		return nil, err
	}
	obj, ok := flowrun.ParseObject(data)
	if !ok {
		return nil, errNotObject
	}
	canon, err := canonicalUnsigned(obj)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	c := &capability{obj: obj, digest: "sha256:" + hex.EncodeToString(sum[:])}
	key, err := readKey(filepath.Join(dir, ".attended_capability.key"))
	if err != nil {
		return c, nil
	}
	sig, ok := str(obj["signature"])
	if !ok {
		return c, nil
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(canon)
	want := "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
	c.valid = hmac.Equal([]byte(sig), []byte(want))
	return c, nil
}

// canonicalUnsigned is canonical(capability without signature), with Flow's
// schema-version exclusions: below v2 also without event_sequence, below v3
// also without source_identity_required and source_identity.
func canonicalUnsigned(obj map[string]json.RawMessage) ([]byte, error) {
	unsigned := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		unsigned[k] = v
	}
	delete(unsigned, "signature")
	var sv float64
	if json.Unmarshal(obj["schema_version"], &sv) != nil {
		return nil, errNotObject
	}
	if sv < 2 {
		delete(unsigned, "event_sequence")
	}
	if sv < 3 {
		delete(unsigned, "source_identity_required")
		delete(unsigned, "source_identity")
	}
	return canonical(unsigned)
}

// canonical re-serializes members (raw values kept token for token) and
// hands them to the bundle package's canonical writer (flow-bundle.md §5.2).
func canonical(obj map[string]json.RawMessage) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return bundle.CanonicalJSON(data)
}

func readKey(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() != 32 {
		return nil, errBadKey
	}
	key, err := readRegular(path, 32)
	if err != nil || len(key) != 32 {
		return nil, errBadKey
	}
	return key, nil
}

var (
	errNotObject = errorString("not a JSON object")
	errBadKey    = errorString("capability key refused")
)

type errorString string

func (e errorString) Error() string { return string(e) }
