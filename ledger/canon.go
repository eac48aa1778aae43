package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// errNotCanonical reports a value that has no canonical form (a number that is
// not an integer) or bytes that differ from their canonical form.
var errNotCanonical = errors.New("not canonical")

// canonical returns the byte form of Python's
// json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False)
// for a tree produced by parseJSON (spec §3.1). Numbers must be integers.
func canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// canonicalLF is canonical(v) followed by one LF: the byte form of every
// content-addressed object.
func canonicalLF(v any) ([]byte, error) {
	b, err := canonical(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		s, err := canonicalInteger(string(x))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case int:
		fmt.Fprintf(buf, "%d", x)
	case int64:
		fmt.Fprintf(buf, "%d", x)
	case string:
		writeCanonicalString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case []string:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonicalString(buf, e)
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Go compares strings bytewise; for UTF-8 that is code-point order,
		// which is what Python's sort_keys gives for these documents.
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonicalString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("%w: unsupported value type %T", errNotCanonical, v)
	}
	return nil
}

// canonicalInteger returns the canonical spelling of a JSON number token. A
// token with a fraction or exponent is refused: OpenAdapt's formats have no
// floats (spec §3.1).
func canonicalInteger(s string) (string, error) {
	if strings.ContainsAny(s, ".eE") {
		return "", fmt.Errorf("%w: non-integer number", errNotCanonical)
	}
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return "", fmt.Errorf("%w: malformed number", errNotCanonical)
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", fmt.Errorf("%w: malformed number", errNotCanonical)
		}
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil // Python prints int(-0) as 0
	}
	if neg {
		return "-" + digits, nil
	}
	return digits, nil
}

const hexLower = "0123456789abcdef"

func writeCanonicalString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	// Fast path: nothing to escape.
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		buf.WriteString(s)
		buf.WriteByte('"')
		return
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				buf.WriteString(`\"`)
			case '\\':
				buf.WriteString(`\\`)
			case '\b':
				buf.WriteString(`\b`)
			case '\f':
				buf.WriteString(`\f`)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				if c < 0x20 {
					buf.WriteString(`\u00`)
					buf.WriteByte(hexLower[c>>4])
					buf.WriteByte(hexLower[c&0xf])
				} else {
					buf.WriteByte(c)
				}
			}
			i++
			continue
		}
		// Everything else, including U+2028/U+2029 and astral characters, is
		// written as raw UTF-8 (ensure_ascii=False).
		_, size := utf8.DecodeRuneInString(s[i:])
		buf.WriteString(s[i : i+size])
		i += size
	}
	buf.WriteByte('"')
}

// checkCanonicalLF parses raw and reports whether raw is exactly
// canonical(parse(raw)) + LF. It returns the parsed value either way when raw
// parses. Duplicate keys and invalid UTF-8 fail the comparison by
// construction: the decoder keeps one key and replaces invalid bytes.
func checkCanonicalLF(raw []byte) (any, error) {
	v, err := parseJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotCanonical, err)
	}
	if !utf8.Valid(raw) {
		return v, fmt.Errorf("%w: invalid utf-8", errNotCanonical)
	}
	c, err := canonicalLF(v)
	if err != nil {
		return v, err
	}
	if !bytes.Equal(c, raw) {
		return v, fmt.Errorf("%w: bytes differ from the canonical form", errNotCanonical)
	}
	return v, nil
}

// CheckCanonical reports whether raw is canonical JSON followed by exactly one
// LF, the rule every content-addressed OpenAdapt object obeys (spec §3.1). It
// returns an error wrapping [ErrNotCanonical] otherwise.
func CheckCanonical(raw []byte) error {
	if _, err := checkCanonicalLF(raw); err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	return nil
}

// sha256Digest returns "sha256:" + lowercase hex of sha256(b): H(b) in the spec.
func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// domainDigest is D(domain, v) = H(domain ‖ NUL ‖ canonical(v)) (spec §3.2).
func domainDigest(domain string, v any) (string, error) {
	c, err := canonical(v)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(domain))
	h.Write([]byte{0})
	h.Write(c)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Domains (spec §3.2). The trailing NUL is added by domainDigest.
const (
	domRegistryEntry        = "OpenAdapt production evidence registry entry v1"
	domRegistryHead         = "OpenAdapt production evidence registry head v2"
	domSemantic             = "OpenAdapt production evidence semantic identity v1"
	domBundleIdentity       = "OpenAdapt production evidence Sigstore bundle identity v1"
	domDecisionReceipt      = "OpenAdapt qualification decision receipt series identity v1"
	domSignerRegistry       = "OpenAdapt qualification signer registry v2"
	domReleaseAdmission     = "OpenAdapt qualification release admission v2"
	domReleaseCandidate     = "OpenAdapt production release candidate v1"
	domArtifactInventory    = "OpenAdapt production release artifact inventory v1"
	domStaging              = "OpenAdapt production release staging evidence v1"
	domTagRulesets          = "OpenAdapt production release tag rulesets v1"
	domImmutableReleases    = "OpenAdapt production immutable releases response v1"
	domTagRefState          = "OpenAdapt production release tag ref state v1"
	domWorkflowAdmission    = "OpenAdapt qualification admission v4"
	domAuthorityState       = "OpenAdapt qualification authority state identity v2"
	domRevocationState      = "OpenAdapt qualification revocation state identity v1"
	domAuthorityReceiptSig  = "OpenAdapt qualification authority state receipt v2"
	domRevocationReceiptSig = "OpenAdapt qualification revocation state receipt v1"
)
