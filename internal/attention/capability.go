package attention

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

var (
	knownActions        = map[string]bool{"continue": true, "skip": true, "reject": true, "teach": true, "escalate": true, "reconcile": true}
	knownDeliveryStates = map[string]bool{"not_delivered": true, "delivered": true, "unknown": true}
)

// capabilitySummary returns the public summary of dir/attended_capability.json
// when its signature verifies with dir/.attended_capability.key, else nil
// (docs/attended.md, "The queue": Capability).
func capabilitySummary(dir string) *Capability {
	c, err := loadCapability(dir)
	if err != nil || !c.valid {
		return nil
	}
	return summaryOf(c)
}

// summaryOf is the public summary of a capability whose signature verified,
// or nil when a summarized member is malformed.
func summaryOf(c *capability) *Capability {
	d, r := c.doc, c.doc.Root()
	sum := &Capability{Digest: c.digest}
	v := d.Get(r, "expires_at")
	if d.Kind(v) != pyjson.String {
		return nil
	}
	sum.ExpiresAt = d.Str(v)
	// allowed_actions: an array of known actions; null is an empty list.
	switch v := d.Get(r, "allowed_actions"); d.Kind(v) {
	case pyjson.Null:
		sum.AllowedActions = []string{}
	case pyjson.Array:
		sum.AllowedActions = make([]string, 0, d.Len(v))
		for a := range d.Elems(v) {
			s := d.Str(a)
			if d.Kind(a) != pyjson.String || !knownActions[s] {
				return nil
			}
			sum.AllowedActions = append(sum.AllowedActions, s)
		}
	default:
		return nil
	}
	v = d.Get(r, "delivery_state")
	if sum.DeliveryState = d.Str(v); d.Kind(v) != pyjson.String || !knownDeliveryStates[sum.DeliveryState] {
		return nil
	}
	// source_identity_required: a boolean, absent meaning false.
	switch v := d.Get(r, "source_identity_required"); {
	case d.True(v):
		sum.SourceIdentityRequired = true
	case d.False(v), v == pyjson.None:
	default:
		return nil
	}
	if si := d.Get(r, "source_identity"); d.Kind(si) == pyjson.Object {
		if st := d.Get(si, "status"); d.Kind(st) == pyjson.String {
			s := d.Str(st)
			sum.SourceIdentityStatus = &s
		}
	}
	return sum
}

// capability is a parsed attended_capability.json with its digests.
type capability struct {
	doc *pyjson.Doc // the file, an object at its root
	// digest is "sha256:" + hex SHA-256 of the canonical unsigned object:
	// the public, non-authorizing id MCP callers echo back.
	digest string
	// valid: the signature equals "hmac-sha256:" + hex HMAC-SHA256 under the
	// run's key.
	valid bool
}

// capabilityJSON are the input rules of a capability file: those of every
// digest Flow computes (docs/bundle.md, "Canonical JSON") — strict
// UTF-8, no lone surrogate, no duplicate key at any depth, finite floats
// (written back as Python's repr), CPython's integer-digit and nesting
// bounds, no byte order mark. A file they refuse has no digest and no valid
// signature; Flow's model refuses it too (a non-finite float is no valid
// value of any capability field).
var capabilityJSON = pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits}

// loadCapability reads and verifies the capability of a run directory.
// The key must be a regular 32-byte file without group or other permission
// bits, as Flow requires.
func loadCapability(dir string) (*capability, error) {
	data, err := readRegular(filepath.Join(dir, "attended_capability.json"), maxCapability)
	if err != nil {
		return nil, err
	}
	d := new(pyjson.Doc)
	if d.Parse(data, capabilityJSON) != nil || d.Kind(d.Root()) != pyjson.Object {
		return nil, errNotObject
	}
	canon, err := canonicalUnsigned(d)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	c := &capability{doc: d, digest: "sha256:" + hex.EncodeToString(sum[:])}
	key, err := readKey(filepath.Join(dir, ".attended_capability.key"))
	if err != nil {
		return c, nil
	}
	sig := d.Get(d.Root(), "signature")
	if d.Kind(sig) != pyjson.String {
		return c, nil
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(canon)
	want := "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil))
	c.valid = hmac.Equal(d.Bytes(sig), []byte(want))
	return c, nil
}

// canonicalUnsigned is the canonical JSON of the capability object at d's
// root without signature, with Flow's schema-version exclusions: below v2
// also without event_sequence, below v3 also without
// source_identity_required and source_identity (attended.py
// AttendedPauseCapability.unsigned). The bytes are Flow's _canonical:
// json.dumps(sort_keys=True, separators=(",",":"), ensure_ascii=False) of
// the parsed members, so every string is written unescaped except '"', '\\'
// and control characters, and floats as Python's repr. It marks the omitted
// members in d ([pyjson.Doc.Omit]).
func canonicalUnsigned(d *pyjson.Doc) ([]byte, error) {
	r := d.Root()
	// schema_version: a number, or null read as 0 (as json.Unmarshal into a
	// float64 always read it here); anything else has no digest.
	sv := 0.0
	switch v := d.Get(r, "schema_version"); d.Kind(v) {
	case pyjson.Null:
	case pyjson.Number:
		f, err := strconv.ParseFloat(string(d.Bytes(v)), 64)
		if err != nil {
			return nil, errNotObject
		}
		sv = f
	default:
		return nil, errNotObject
	}
	omit := func(key string) {
		if k, _ := d.Member(r, key); k != pyjson.None {
			d.Omit(k)
		}
	}
	omit("signature")
	if sv < 2 {
		omit("event_sequence")
	}
	if sv < 3 {
		omit("source_identity_required")
		omit("source_identity")
	}
	return d.AppendCanonical(nil, r)
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
