// Frozen copy of ledger/parse.go and the canonical writer of ledger/canon.go
// before internal/util/pyjson replaced them: a differential oracle for tests only.

package jsonoracle

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const ledgerMaxDepth = 512

var errJSON = errors.New("invalid json")

// parseJSON parses one JSON document into map[string]any, []any, string,
// json.Number, bool and nil. It is strict where encoding/json is lenient:
// duplicate object keys, invalid UTF-8 and lone surrogates are errors
// (fail closed), and numbers stay exact (json.Number). Trailing data after
// the value is an error. It is hand-written because the evidence registry
// grows linearly and encoding/json's reflection dominated verification.
func LedgerParse(b []byte) (any, error) {
	p := &lparser{b: b}
	p.ws()
	v, err := p.value(0)
	if err != nil {
		return nil, fmt.Errorf("parsing json at byte %d: %w", p.i, err)
	}
	p.ws()
	if p.i != len(p.b) {
		return nil, fmt.Errorf("parsing json: trailing data after the value: %w", errJSON)
	}
	return v, nil
}

type lparser struct {
	b []byte
	i int
}

func (p *lparser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *lparser) value(depth int) (any, error) {
	if depth > ledgerMaxDepth {
		return nil, fmt.Errorf("nesting too deep: %w", errJSON)
	}
	if p.i >= len(p.b) {
		return nil, fmt.Errorf("unexpected end: %w", errJSON)
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, fmt.Errorf("unexpected character: %w", errJSON)
}

func (p *lparser) lit(s string) error {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return fmt.Errorf("bad literal: %w", errJSON)
	}
	p.i += len(s)
	return nil
}

func (p *lparser) object(depth int) (any, error) {
	p.i++ // {
	m := make(map[string]any, 8)
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, fmt.Errorf("expected a key: %w", errJSON)
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("duplicate key: %w", errJSON)
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, fmt.Errorf("expected ':': %w", errJSON)
		}
		p.i++
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.ws()
		if p.i >= len(p.b) {
			return nil, fmt.Errorf("unterminated object: %w", errJSON)
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, fmt.Errorf("expected ',' or '}': %w", errJSON)
		}
	}
}

func (p *lparser) array(depth int) (any, error) {
	p.i++ // [
	l := []any{}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return l, nil
	}
	for {
		p.ws()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		l = append(l, v)
		p.ws()
		if p.i >= len(p.b) {
			return nil, fmt.Errorf("unterminated array: %w", errJSON)
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return l, nil
		default:
			return nil, fmt.Errorf("expected ',' or ']': %w", errJSON)
		}
	}
}

func (p *lparser) str() (string, error) {
	p.i++ // opening quote
	start := p.i
	// Fast path: no escapes.
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			s := p.b[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return "", fmt.Errorf("invalid utf-8: %w", errJSON)
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.i++
	}
	buf := append([]byte(nil), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return "", fmt.Errorf("invalid utf-8: %w", errJSON)
			}
			return string(buf), nil
		case c < 0x20:
			return "", fmt.Errorf("control character in string: %w", errJSON)
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.b) {
			break
		}
		e := p.b[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", fmt.Errorf("bad \\u escape: %w", errJSON)
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by a low one is a character.
				if r >= 0xdc00 || p.i+1 >= len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
					return "", fmt.Errorf("lone surrogate: %w", errJSON)
				}
				p.i += 2
				r2, ok := p.hex4()
				if !ok || r2 < 0xdc00 || r2 > 0xdfff {
					return "", fmt.Errorf("lone surrogate: %w", errJSON)
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", fmt.Errorf("bad escape: %w", errJSON)
		}
	}
	return "", fmt.Errorf("unterminated string: %w", errJSON)
}

func (p *lparser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.b[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(n), true
}

func ldigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *lparser) number() (any, error) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.i < len(p.b) && ldigit(p.b[p.i]) && p.b[p.i] != '0':
		for p.i < len(p.b) && ldigit(p.b[p.i]) {
			p.i++
		}
	default:
		return nil, fmt.Errorf("bad number: %w", errJSON)
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.i >= len(p.b) || !ldigit(p.b[p.i]) {
			return nil, fmt.Errorf("bad number: %w", errJSON)
		}
		for p.i < len(p.b) && ldigit(p.b[p.i]) {
			p.i++
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.i >= len(p.b) || !ldigit(p.b[p.i]) {
			return nil, fmt.Errorf("bad number: %w", errJSON)
		}
		for p.i < len(p.b) && ldigit(p.b[p.i]) {
			p.i++
		}
	}
	return json.Number(p.b[start:p.i]), nil
}
