package pyjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ErrNotCanonical is returned by the canonical writers for a value that has
// no canonical form: a float under FloatRefuse, a non-finite float, a
// malformed number or an unsupported Go type.
var ErrNotCanonical = errors.New("no canonical form")

// AppendCanonical appends the canonical JSON of v to dst: Python's
// json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False).
// Members marked with [Doc.Omit] are left out. Integers are written exactly
// ("-0" as "0"); floats as Python's repr, or refused under FloatRefuse.
func (d *Doc) AppendCanonical(dst []byte, v V) ([]byte, error) {
	if d.Kind(v) == Invalid {
		return dst, fmt.Errorf("%w: absent value", ErrNotCanonical)
	}
	return d.appendCanon(dst, uint32(v))
}

// AppendCanonicalWith is AppendCanonical of object obj with one more member,
// key with the canonical value val, in its sorted place. key must not name a
// member of obj that is not omitted.
func (d *Doc) AppendCanonicalWith(dst []byte, obj V, key string, val []byte) ([]byte, error) {
	if d.Kind(obj) != Object {
		return dst, fmt.Errorf("%w: not an object", ErrNotCanonical)
	}
	return d.appendObject(dst, uint32(obj), key, val)
}

func (d *Doc) appendCanon(dst []byte, v uint32) ([]byte, error) {
	t := &d.toks[v]
	switch t.kind {
	case Null, Bool:
		return append(dst, d.src[t.off:t.end]...), nil
	case Number:
		if t.flags&fFloat != 0 {
			if d.opt.Floats != FloatRepr {
				return dst, fmt.Errorf("%w: non-integer number at byte %d", ErrNotCanonical, t.off)
			}
			return append(dst, d.dec[t.a:t.a+t.n]...), nil
		}
		if t.end-t.off == 2 && d.src[t.off] == '-' && d.src[t.off+1] == '0' {
			return append(dst, '0'), nil // Python prints int(-0) as 0
		}
		return append(dst, d.src[t.off:t.end]...), nil
	case String:
		if t.flags&fEscaped != 0 {
			return AppendString(dst, d.dec[t.a:t.a+t.n]), nil
		}
		// Unescaped source bytes hold no '"', '\\' or control character:
		// the token is its own canonical form.
		return append(dst, d.src[t.off:t.end]...), nil
	case Array:
		dst = append(dst, '[')
		e := v + 1
		var err error
		for i := range t.n {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = d.appendCanon(dst, e); err != nil {
				return dst, err
			}
			e = d.next(e)
		}
		return append(dst, ']'), nil
	default:
		return d.appendObject(dst, v, "", nil)
	}
}

func (d *Doc) appendObject(dst []byte, v uint32, xkey string, xval []byte) ([]byte, error) {
	t := &d.toks[v]
	dst = append(dst, '{')
	first := true
	var err error
	for _, k := range d.perm[t.p : t.p+t.n] {
		kt := &d.toks[k]
		if kt.flags&fOmit != 0 {
			continue
		}
		if xval != nil && strings.Compare(xkey, view(d.keyBytes(k))) < 0 {
			dst = appendRawMember(dst, first, xkey, xval)
			first, xval = false, nil
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		if dst, err = d.appendCanon(dst, k); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = d.appendCanon(dst, k+1); err != nil {
			return dst, err
		}
	}
	if xval != nil {
		dst = appendRawMember(dst, first, xkey, xval)
	}
	return append(dst, '}'), nil
}

func appendRawMember(dst []byte, first bool, key string, val []byte) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = AppendString(dst, key)
	dst = append(dst, ':')
	return append(dst, val...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s (UTF-8) as Python's json.dumps(ensure_ascii=False)
// writes it: '"' and '\\' escaped, \n \r \t \b \f by name, every other code
// point below U+0020 as \u00xx (lowercase hex); everything else raw,
// including U+007F, U+2028, U+2029, '<', '>', '&', '/' and astral characters.
func AppendString[S ~string | ~[]byte](dst []byte, s S) []byte {
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

// AppendFloat appends x as CPython's float repr (docs/bundle.md, Canonical
// JSON): the
// shortest round-tripping digits; fixed notation when the decimal exponent e
// satisfies -4 <= e < 16 (at least one digit after the point), otherwise
// scientific with a mandatory exponent sign and at least two exponent digits.
// Zero keeps its sign. x must be finite.
func AppendFloat(dst []byte, x float64) []byte {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], x, 'e', -1, 64) // [-]d[.ddd]e±XX
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	ei := 0
	for b[ei] != 'e' {
		ei++
	}
	mant, ex := b[:ei], b[ei+1:]
	exp := 0
	for _, c := range ex[1:] {
		exp = exp*10 + int(c-'0')
	}
	if ex[0] == '-' {
		exp = -exp
	}
	var dg [24]byte
	digits := dg[:0]
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	if exp >= -4 && exp < 16 {
		if exp < 0 {
			dst = append(dst, '0', '.')
			for i := 0; i < -exp-1; i++ {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		}
		point := exp + 1
		if len(digits) <= point {
			dst = append(dst, digits...)
			for i := len(digits); i < point; i++ {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		}
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		return append(dst, digits[point:]...)
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if exp < 0 {
		dst = append(dst, '-')
		exp = -exp
	} else {
		dst = append(dst, '+')
	}
	if exp < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(exp), 10)
}

// FormatFloat is AppendFloat as a string.
func FormatFloat(x float64) string { return string(AppendFloat(nil, x)) }

// CanonicalInt returns the canonical spelling of an integer token (decimal
// digits with an optional '-'): leading zeros dropped, "-0" as "0". A token
// with '.', 'e', 'E' or anything else is refused.
func CanonicalInt(s string) (string, error) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return "", fmt.Errorf("%w: malformed number", ErrNotCanonical)
	}
	for i := 0; i < len(digits); i++ {
		if c := digits[i]; c < '0' || c > '9' {
			if c == '.' || c == 'e' || c == 'E' {
				return "", fmt.Errorf("%w: non-integer number", ErrNotCanonical)
			}
			return "", fmt.Errorf("%w: malformed number", ErrNotCanonical)
		}
	}
	t := strings.TrimLeft(digits, "0")
	switch {
	case t == "":
		return "0", nil
	case len(t) == len(s):
		return s, nil
	case len(s) > len(digits):
		return "-" + t, nil
	}
	return t, nil
}

// AppendValue appends the canonical JSON of a tree built of nil, bool,
// string, json.Number, int, int64, float64, []any, []string and
// map[string]any (what [Doc.Value] returns, plus what callers add). A
// json.Number float or a float64 is written as Python's repr under FloatRepr
// and refused under FloatRefuse.
func AppendValue(dst []byte, v any, floats FloatMode) ([]byte, error) {
	var err error
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case json.Number:
		s := string(x)
		c, err := CanonicalInt(s)
		if err == nil {
			return append(dst, c...), nil
		}
		if floats != FloatRepr || !strings.ContainsAny(s, ".eE") {
			return dst, err
		}
		f, perr := strconv.ParseFloat(s, 64)
		if perr != nil || math.IsInf(f, 0) {
			return dst, fmt.Errorf("%w: malformed number", ErrNotCanonical)
		}
		return AppendFloat(dst, f), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float64:
		if floats != FloatRepr {
			return dst, fmt.Errorf("%w: non-integer number", ErrNotCanonical)
		}
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return dst, fmt.Errorf("%w: non-finite number", ErrNotCanonical)
		}
		return AppendFloat(dst, x), nil
	case string:
		return AppendString(dst, x), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, e)
		}
		return append(dst, ']'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = AppendValue(dst, e, floats); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		var stack [16]string
		keys := stack[:0]
		for k := range x {
			keys = append(keys, k)
		}
		// Byte order of UTF-8 is code-point order: Python's sort_keys.
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			if dst, err = AppendValue(dst, x[k], floats); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("%w: unsupported value type %T", ErrNotCanonical, v)
}
