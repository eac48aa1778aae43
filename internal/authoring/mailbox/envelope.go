package mailbox

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// EnvelopeSchema is the command envelope's schema_version.
const EnvelopeSchema = "openadapt.authoring.command/v1"

// MaxEnvelopeBytes bounds one command envelope.
const MaxEnvelopeBytes = 8 << 10

// Patterns of the envelope (docs/mailbox.md, "The command envelope"; openadapt-types
// authoring-command-v1). command_id accepts what the clients accept, wider
// than the service's cmd_ + 26 ULID characters.
var (
	commandIDRE = lazyre.New(`^[A-Za-z0-9_.:-]{1,200}$`)
	// The contract's timestamps, with optional fractional seconds (RFC 3339).
	timestampRE = lazyre.New(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$`)
)

// The envelope's closed field set, and the fields the contract requires.
var (
	envelopeFields = set("command_id", "pack_id", "tool", "args", "enqueued_at", "expires_at", "status",
		"result", "oauth_sub_sha256", "client_id_sha256", "client_display", "schema_version")
	envelopeRequired = []string{"command_id", "pack_id", "tool", "args", "enqueued_at", "expires_at",
		"status", "oauth_sub_sha256", "client_id_sha256"}
	commandStatuses = set("pending", "running", "done", "error", "expired", "halted")
	clientDisplays  = set("ChatGPT", "Claude")
)

func set(v ...string) map[string]bool {
	m := make(map[string]bool, len(v))
	for _, s := range v {
		m[s] = true
	}
	return m
}

// Envelope is a decoded, shape-checked command envelope. Tool is any string
// here: the client answers unknown tools itself.
type Envelope struct {
	CommandID     string
	PackID        string
	Tool          string
	Args          map[string]json.RawMessage
	EnqueuedAt    time.Time
	ExpiresAt     time.Time
	Status        string
	Sub           string // oauth_sub_sha256
	ClientID      string // client_id_sha256
	ClientDisplay string // "" when absent
}

// errEnvelope is a malformed envelope. CommandID is set when the envelope
// still named a well-formed command_id, so the client can answer it with
// unknown_command; otherwise nothing can be answered.
type errEnvelope struct{ CommandID string }

func (e *errEnvelope) Error() string { return "malformed command envelope" }

// DecodeEnvelope decodes one command envelope (docs/mailbox.md, "The command
// envelope"): a JSON object
// of at most [MaxEnvelopeBytes] with no duplicate keys, only the contract's
// fields, every required field, and each field of its declared shape.
// Unknown fields, an oversized envelope or a bad field give an error (the
// client answers unknown_command when the command_id is usable).
func DecodeEnvelope(raw []byte) (Envelope, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return Envelope{}, &errEnvelope{}
	}
	var id string
	if v, ok := obj["command_id"]; ok {
		if json.Unmarshal(v, &id) != nil || !commandIDRE().MatchString(id) {
			id = ""
		}
	}
	bad := &errEnvelope{CommandID: id}
	if id == "" || len(raw) > MaxEnvelopeBytes {
		return Envelope{}, bad
	}
	for k := range obj {
		if !envelopeFields[k] {
			return Envelope{}, bad
		}
	}
	for _, k := range envelopeRequired {
		if _, ok := obj[k]; !ok {
			return Envelope{}, bad
		}
	}
	str := func(k string) (string, bool) {
		var s string
		v, ok := obj[k]
		if !ok {
			return "", true
		}
		return s, json.Unmarshal(v, &s) == nil
	}
	e := Envelope{CommandID: id}
	var ok bool
	if e.PackID, ok = str("pack_id"); !ok || !ValidPack(e.PackID) {
		return Envelope{}, bad
	}
	if e.Tool, ok = str("tool"); !ok || e.Tool == "" || len(e.Tool) > 64 {
		return Envelope{}, bad
	}
	if e.Status, ok = str("status"); !ok || !commandStatuses[e.Status] {
		return Envelope{}, bad
	}
	if e.Sub, ok = str("oauth_sub_sha256"); !ok || len(e.Sub) != 64 || !isLowerHex(e.Sub) {
		return Envelope{}, bad
	}
	if e.ClientID, ok = str("client_id_sha256"); !ok || len(e.ClientID) != 64 || !isLowerHex(e.ClientID) {
		return Envelope{}, bad
	}
	if e.ClientDisplay, ok = str("client_display"); !ok || (e.ClientDisplay != "" && !clientDisplays[e.ClientDisplay]) {
		return Envelope{}, bad
	}
	if _, present := obj["client_display"]; present && e.ClientDisplay == "" {
		return Envelope{}, bad
	}
	if v, present := obj["schema_version"]; present {
		var s string
		if json.Unmarshal(v, &s) != nil || s != EnvelopeSchema {
			return Envelope{}, bad
		}
	}
	for _, f := range []struct {
		key string
		dst *time.Time
	}{{"enqueued_at", &e.EnqueuedAt}, {"expires_at", &e.ExpiresAt}} {
		s, ok := str(f.key)
		if !ok || !timestampRE().MatchString(s) {
			return Envelope{}, bad
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Envelope{}, bad
		}
		*f.dst = t
	}
	if err := json.Unmarshal(obj["args"], &e.Args); err != nil || e.Args == nil {
		return Envelope{}, bad
	}
	// result is the service's own field (null while pending); it is never
	// read, only checked to be null or an object.
	if v, present := obj["result"]; present && string(v) != "null" {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return Envelope{}, bad
		}
	}
	return e, nil
}

// isEnvelopeError reports whether err is a malformed envelope, and the
// command id it may be answered under.
func isEnvelopeError(err error) (string, bool) {
	var e *errEnvelope
	if errors.As(err, &e) {
		return e.CommandID, true
	}
	return "", false
}
