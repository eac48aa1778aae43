package jsonoracle

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Frozen copy of bundle/json.go as it was before internal/util/pyjson replaced it
// (commit 9c94728): a differential oracle for tests only. Do not fix or
// extend it; it is what the new core must agree with.
//
// This file holds a strict JSON reader that keeps what Flow's digest depends
// on (object member order for metadata, the integer/float distinction of
// every number token) and the canonical writer of docs/bundle.md, Canonical
// JSON.
// encoding/json is unusable here: it loses member order and number tokens,
// accepts duplicate keys and lone surrogates, and escapes <>& and U+2028.

type jsonKind uint8

const (
	jNull jsonKind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

// value is one parsed JSON value. For numbers, s holds the canonical text
// (computed at parse time) and isInt tells integer tokens from floats.
type value struct {
	kind  jsonKind
	b     bool
	isInt bool
	s     string
	arr   []value
	obj   []member
}

// member is one object member, in source order. omit marks a member that the
// schema-v2 default removals drop from the digest input.
type member struct {
	key  string
	val  value
	omit bool
}

// get returns the value of key in an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != jObject {
		return nil
	}
	for i := range v.obj {
		if v.obj[i].key == key {
			return &v.obj[i].val
		}
	}
	return nil
}

// maxIntDigits is CPython's default int_max_str_digits.
const maxIntDigits = 4300

// maxDepth bounds nesting (CPython's json module stops near 1000 as well).
const maxDepth = 1000

type parser struct {
	data  []byte
	pos   int
	depth int
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.off) }

// parseJSON parses one complete JSON document under the input rules of
// docs/bundle.md, Canonical JSON: no leading BOM, valid UTF-8, no lone
// surrogate escape, no duplicate key at any depth, finite numbers only,
// nothing after the value. Error texts carry offsets only, never content.
func parseJSON(data []byte) (v value, err error) {
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		return value{}, &syntaxError{"leading byte order mark", 0}
	}
	p := parser{data: data}
	p.ws()
	if err := p.value(&v); err != nil {
		return value{}, err
	}
	p.ws()
	if p.pos != len(p.data) {
		return value{}, p.fail("unexpected data after the top-level value")
	}
	return v, nil
}

// parseObject parses a document whose top level must be an object.
func parseObject(data []byte) (value, error) {
	v, err := parseJSON(data)
	if err != nil {
		return v, err
	}
	if v.kind != jObject {
		return value{}, &syntaxError{"top level is not an object", 0}
	}
	return v, nil
}

func (p *parser) fail(msg string) error { return &syntaxError{msg, p.pos} }

func (p *parser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(v *value) error {
	if p.pos >= len(p.data) {
		return p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(v)
	case c == '[':
		return p.array(v)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		*v = value{kind: jString, s: s}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(v)
	case c == 't':
		return p.lit("true", value{kind: jBool, b: true}, v)
	case c == 'f':
		return p.lit("false", value{kind: jBool}, v)
	case c == 'n':
		return p.lit("null", value{kind: jNull}, v)
	default:
		return p.fail("unexpected character")
	}
}

func (p *parser) lit(word string, lv value, v *value) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	*v = lv
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("nesting too deep")
	}
	return nil
}

func (p *parser) object(v *value) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '{'
	*v = value{kind: jObject}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		v.obj = []member{}
		return nil
	}
	var seen map[string]struct{}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.fail("expected object key")
		}
		keyOff := p.pos
		key, err := p.str()
		if err != nil {
			return err
		}
		// Duplicate keys fail closed (a documented divergence: Python keeps
		// the last).
		if len(v.obj) < 16 {
			for i := range v.obj {
				if v.obj[i].key == key {
					return &syntaxError{"duplicate object key", keyOff}
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(v.obj))
				for i := range v.obj {
					seen[v.obj[i].key] = struct{}{}
				}
			}
			if _, dup := seen[key]; dup {
				return &syntaxError{"duplicate object key", keyOff}
			}
			seen[key] = struct{}{}
		}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.fail("expected ':'")
		}
		p.pos++
		p.ws()
		v.obj = append(v.obj, member{key: key})
		if err := p.value(&v.obj[len(v.obj)-1].val); err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of input")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail("expected ',' or '}'")
		}
	}
}

func (p *parser) array(v *value) error {
	if err := p.enter(); err != nil {
		return err
	}
	p.pos++ // '['
	*v = value{kind: jArray, arr: []value{}}
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		p.ws()
		v.arr = append(v.arr, value{})
		if err := p.value(&v.arr[len(v.arr)-1]); err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of input")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return nil
		default:
			return p.fail("expected ',' or ']'")
		}
	}
}

// str parses a string token starting at '"'.
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		case c == '\\':
			return p.strSlow(start)
		case c < 0x20:
			return "", p.fail("control character in string")
		case c < 0x80:
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			p.pos += size
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) strSlow(start int) (string, error) {
	var sb strings.Builder
	sb.Write(p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return sb.String(), nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.fail("unterminated escape")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("invalid \\u escape")
				}
				switch {
				case r >= 0xD800 && r < 0xDC00:
					if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
						p.pos += 2
						r2, ok := p.hex4()
						if !ok {
							return "", p.fail("invalid \\u escape")
						}
						if r2 < 0xDC00 || r2 > 0xDFFF {
							return "", p.fail("lone surrogate escape")
						}
						r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					} else {
						return "", p.fail("lone surrogate escape")
					}
				case r >= 0xDC00 && r <= 0xDFFF:
					return "", p.fail("lone surrogate escape")
				}
				sb.WriteRune(r)
			default:
				return "", p.fail("invalid escape")
			}
		case c < 0x20:
			return "", p.fail("control character in string")
		case c < 0x80:
			sb.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.fail("invalid UTF-8")
			}
			sb.Write(p.data[p.pos : p.pos+size])
			p.pos += size
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

// number parses a JSON number token and stores its canonical text:
// integer tokens keep their exact decimal value ("-0" becomes "0"); any token
// with '.', 'e' or 'E' is a float written as Python's repr.
func (p *parser) number(v *value) error {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos >= len(p.data) {
		return p.fail("invalid number")
	}
	if p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.fail("invalid number")
	}
	isInt := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		isInt = false
		p.pos++
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		isInt = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.fail("invalid number")
		}
	}
	tok := string(p.data[start:p.pos])
	if isInt {
		// CPython (3.11+) refuses to convert integer literals of more than
		// 4300 digits, so Flow cannot load such a file: fail closed too.
		if n := len(strings.TrimPrefix(tok, "-")); n > maxIntDigits {
			return &syntaxError{"integer literal too long", start}
		}
		if tok == "-0" {
			tok = "0"
		}
		*v = value{kind: jNumber, isInt: true, s: tok}
		return nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil || math.IsInf(f, 0) {
		return &syntaxError{"number out of range", start}
	}
	*v = value{kind: jNumber, s: formatFloat(f)}
	return nil
}

// formatFloat writes x as CPython's float repr (docs/bundle.md, Canonical
// JSON): the
// shortest round-tripping digits; fixed notation when the decimal exponent e
// satisfies -4 <= e < 16 (with at least one digit after the point), otherwise
// scientific with a mandatory exponent sign and at least two exponent digits.
func formatFloat(x float64) string {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], x, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	ei := bytes.IndexByte(b, 'e')
	mant, expPart := b[:ei], b[ei+1:]
	exp, _ := strconv.Atoi(string(expPart))
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	out := make([]byte, 0, 32)
	if neg {
		out = append(out, '-')
	}
	if exp >= -4 && exp < 16 {
		if exp < 0 {
			out = append(out, '0', '.')
			for i := 0; i < -exp-1; i++ {
				out = append(out, '0')
			}
			out = append(out, digits...)
		} else {
			point := exp + 1
			if len(digits) <= point {
				out = append(out, digits...)
				for i := len(digits); i < point; i++ {
					out = append(out, '0')
				}
				out = append(out, '.', '0')
			} else {
				out = append(out, digits[:point]...)
				out = append(out, '.')
				out = append(out, digits[point:]...)
			}
		}
		return string(out)
	}
	out = append(out, digits[0])
	if len(digits) > 1 {
		out = append(out, '.')
		out = append(out, digits[1:]...)
	}
	out = append(out, 'e')
	if exp < 0 {
		out = append(out, '-')
		exp = -exp
	} else {
		out = append(out, '+')
	}
	if exp < 10 {
		out = append(out, '0')
	}
	out = strconv.AppendInt(out, int64(exp), 10)
	return string(out)
}

// appendCanonical appends the canonical JSON of v to dst, skipping
// members marked omit.
func appendCanonical(dst []byte, v *value) []byte {
	switch v.kind {
	case jNull:
		return append(dst, "null"...)
	case jBool:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case jNumber:
		return append(dst, v.s...)
	case jString:
		return appendString(dst, v.s)
	case jArray:
		dst = append(dst, '[')
		for i := range v.arr {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendCanonical(dst, &v.arr[i])
		}
		return append(dst, ']')
	default:
		return appendObject(dst, v.obj)
	}
}

func appendObject(dst []byte, obj []member) []byte {
	// Sort by key in code-point order; Go compares strings bytewise, which
	// for valid UTF-8 is code-point order.
	var stack [32]*member
	ms := stack[:0]
	for i := range obj {
		if !obj[i].omit {
			ms = append(ms, &obj[i])
		}
	}
	slices.SortFunc(ms, func(a, b *member) int { return strings.Compare(a.key, b.key) })
	dst = append(dst, '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, m.key)
		dst = append(dst, ':')
		dst = appendCanonical(dst, &m.val)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as Python json.dumps(ensure_ascii=False) does: only
// '"', '\\' and code points below U+0020 are escaped; everything else is raw UTF-8.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// CanonicalJSON is the old bundle.CanonicalJSON: strict parse, canonical form.
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := parseJSON(data)
	if err != nil {
		return nil, err
	}
	return appendCanonical(make([]byte, 0, len(data)), &v), nil
}
