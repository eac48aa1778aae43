package mailbox

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
)

// ProductionOrigin is the only origin a production link may name.
const ProductionOrigin = "https://openadapt.ai"

// OriginEnv names the test-only origin override: http://127.0.0.1:PORT or
// http://[::1]:PORT. Any other non-empty value is refused.
const OriginEnv = "OPENADAPT_MAILBOX_ORIGIN"

// MaxLinkBytes bounds the whole link.
const MaxLinkBytes = 2048

// ErrInvalidLink is wrapped by every link parse error.
var ErrInvalidLink = errors.New("invalid runner link")

// LinkError says which part of the link is wrong. It never carries the value.
type LinkError struct {
	Field  string // "link", "pack", "bind", "origin", or OriginEnv
	Reason string // fixed text
}

func (e *LinkError) Error() string {
	if e.Field == "link" {
		return "the runner link " + e.Reason
	}
	if e.Field == OriginEnv {
		return OriginEnv + " " + e.Reason
	}
	return "the runner link's " + e.Field + " field " + e.Reason
}

func (e *LinkError) Unwrap() error { return ErrInvalidLink }

func linkErr(field, reason string) error { return &LinkError{Field: field, Reason: reason} }

// Secret holds a credential (the oab_ bind token or the oals_ lease secret).
// Its String, GoString, Format, MarshalJSON, MarshalText and LogValue all
// give a fixed placeholder; only this package can read the value.
type Secret struct{ v string }

const redacted = "[redacted]"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(redacted)) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (s Secret) reveal() string             { return s.v }
func (s Secret) IsZero() bool               { return s.v == "" }

// Link is a parsed openadapt://runner link.
type Link struct {
	Pack   string // the job id: p. alias or v1. ciphertext (not a secret, but never printed)
	Bind   Secret // the one-time oab_ bind token
	Origin string // the mailbox origin requests go to
}

// ParseLink parses and validates an openadapt://runner link (docs/mailbox.md,
// "The runner link").
// originEnv is the value of [OriginEnv] ("" when unset). The link is
// exactly
//
//	openadapt://runner?pack=P&bind=B&origin=O
//
// with the three fields in any order, each exactly once, nothing else, at
// most [MaxLinkBytes]. Values may be percent-encoded (as Python's parse_qs
// reads them); keys may not. Surrounding whitespace (a pasted newline) is
// ignored. Errors wrap [ErrInvalidLink], are [*LinkError] values, and name
// the field, never its value.
func ParseLink(s, originEnv string) (Link, error) {
	want, err := allowedOrigin(originEnv)
	if err != nil {
		return Link{}, err
	}
	if len(s) > MaxLinkBytes+64 {
		return Link{}, linkErr("link", "is longer than 2048 bytes")
	}
	s = strings.Trim(s, " \t\r\n")
	if len(s) > MaxLinkBytes {
		return Link{}, linkErr("link", "is longer than 2048 bytes")
	}
	const prefix = "openadapt://runner?"
	if !strings.HasPrefix(s, prefix) {
		return Link{}, linkErr("link", "must start with openadapt://runner?")
	}
	q := s[len(prefix):]
	if strings.ContainsAny(q, "#;") {
		return Link{}, linkErr("link", "must have no fragment and no ';' separators")
	}
	var vals [3]string
	var seen [3]bool
	for _, part := range strings.Split(q, "&") {
		k, v, ok := strings.Cut(part, "=")
		idx, known := linkFields[k]
		if !ok || !known {
			return Link{}, linkErr("link", "may hold only the fields pack, bind and origin")
		}
		field := k
		if seen[idx] {
			return Link{}, linkErr(field, "appears more than once")
		}
		seen[idx] = true
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return Link{}, linkErr(field, "is not valid percent-encoding")
		}
		vals[idx] = dv
	}
	for i, f := range [3]string{"pack", "bind", "origin"} {
		if !seen[i] {
			return Link{}, linkErr(f, "is missing")
		}
	}
	if !ValidPack(vals[0]) {
		return Link{}, linkErr("pack", "is malformed (want p. and 12 characters, or v1. and 32-2000 characters of A-Z a-z 0-9 _ -)")
	}
	if !ValidBind(vals[1]) {
		return Link{}, linkErr("bind", "is not a one-time oab_ bind token")
	}
	if vals[2] != want {
		if want == ProductionOrigin {
			return Link{}, linkErr("origin", "must be exactly https://openadapt.ai")
		}
		return Link{}, linkErr("origin", "must equal "+OriginEnv)
	}
	return Link{Pack: vals[0], Bind: Secret{vals[1]}, Origin: want}, nil
}

var linkFields = map[string]int{"pack": 0, "bind": 1, "origin": 2}

// allowedOrigin is the origin a link must name: the production origin, or
// the validated test override.
func allowedOrigin(env string) (string, error) {
	if env == "" {
		return ProductionOrigin, nil
	}
	var port string
	switch {
	case strings.HasPrefix(env, "http://127.0.0.1:"):
		port = env[len("http://127.0.0.1:"):]
	case strings.HasPrefix(env, "http://[::1]:"):
		port = env[len("http://[::1]:"):]
	default:
		return "", linkErr(OriginEnv, "may only name http://127.0.0.1:PORT or http://[::1]:PORT (a test-only override)")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", linkErr(OriginEnv, "has no valid port")
	}
	return env, nil
}

// isB64URL reports whether s is non-empty and only A-Z a-z 0-9 _ -. A byte
// loop, not a regexp: Go's regexp refuses repeat counts over 1000.
func isB64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// ValidPack reports whether s is a pack id: "p." and 12, or "v1." and
// 32–2000, of A-Z a-z 0-9 _ -.
func ValidPack(s string) bool {
	switch {
	case strings.HasPrefix(s, "p."):
		return len(s) == 2+12 && isB64URL(s[2:])
	case strings.HasPrefix(s, "v1."):
		n := len(s) - 3
		return n >= 32 && n <= 2000 && isB64URL(s[3:])
	}
	return false
}

// ValidBind reports whether s is exactly one oab_ bind token: "oab_" and 43
// of A-Z a-z 0-9 _ -. oar_ (cloud runner) and oap_ (pairing) credentials,
// and an oab_ with a 64-hex body (a different family), are refused.
func ValidBind(s string) bool {
	if !strings.HasPrefix(s, "oab_") {
		return false
	}
	body := s[4:]
	if len(body) == 64 && isLowerHex(body) {
		return false
	}
	return len(body) == 43 && isB64URL(body)
}

// ValidLease reports whether s is a mailbox lease secret: "oals_" and 64
// lowercase hex (43 base64url characters are a different family).
func ValidLease(s string) bool {
	return strings.HasPrefix(s, "oals_") && len(s) == 5+64 && isLowerHex(s[5:])
}
