package jsonoracle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

var errNotCanonical = errors.New("not canonical")

// canonical returns the byte form of Python's
// json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False)
// for a tree produced by parseJSON (docs/ledger.md, Canonical objects).
// Numbers must be integers.
func LedgerCanonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
// floats.
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

const lhexLower = "0123456789abcdef"

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
					buf.WriteByte(lhexLower[c>>4])
					buf.WriteByte(lhexLower[c&0xf])
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
