package pyjson

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Kind is the JSON type of a value.
type Kind uint8

// The kinds. Invalid is the kind of [None] (an absent value).
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

// FloatMode says what a number token with '.', 'e' or 'E' means.
type FloatMode uint8

const (
	// FloatRepr: a float must be finite as an IEEE-754 double (a literal that
	// overflows to ±Inf is refused at parse time) and is written as Python's
	// float repr (docs/bundle.md, Canonical JSON).
	FloatRepr FloatMode = iota
	// FloatRefuse: a float parses (kept as its token) but has no canonical
	// form; the canonical writer refuses it (docs/ledger.md, Canonical
	// objects).
	FloatRefuse
)

// BOMMode says what a leading UTF-8 byte order mark means.
type BOMMode uint8

const (
	// BOMRefuse: a leading BOM is a syntax error (Python's json.loads on a str).
	BOMRefuse BOMMode = iota
	// BOMSkip: a leading BOM is ignored.
	BOMSkip
)

// DefaultMaxDepth is the nesting bound when [Options.MaxDepth] is 0 (CPython's
// json module stops near 1000 as well).
const DefaultMaxDepth = 1000

// PythonIntMaxDigits is CPython's default int_max_str_digits: Python 3.11+
// refuses to convert longer integer literals, so a file holding one cannot be
// loaded by Flow.
const PythonIntMaxDigits = 4300

// Options are the per-caller input rules. The zero value is Flow's rules
// minus the integer bound: floats as Python repr, BOM refused, depth 1000.
type Options struct {
	MaxDepth     int // nested arrays and objects; 0 means DefaultMaxDepth
	MaxIntDigits int // digits of an integer literal; 0 means no bound
	Floats       FloatMode
	BOM          BOMMode
	// Closed makes [Unmarshal] refuse an object key that names no field of
	// the struct it decodes into (a closed format). Parse ignores it.
	Closed bool
}

// SyntaxError is a parse failure. Msg names the problem; Offset is a byte
// offset into the input. Neither carries input content.
type SyntaxError struct {
	Msg    string
	Offset int
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("%s at byte %d", e.Msg, e.Offset) }

// V is a handle to one value of a [Doc]: the index of its first token.
type V int32

// None is the handle of an absent value; its kind is Invalid.
const None V = -1

const (
	fEscaped = 1 << iota // string: decoded form in dec[a:a+n]
	fFloat               // number: a float token; FloatRepr: repr in dec[a:a+n]
	fTrue                // bool: true
	fOmit                // object key: member left out of canonical output
)

// token is one value or object key. Containers span their whole subtree.
type token struct {
	off, end uint32 // source span (strings include the quotes)
	kind     Kind
	flags    uint8
	a        uint32 // container: index of the token after the subtree; escaped string, float: offset in dec
	n        uint32 // container: element / member count; escaped string, float: length in dec
	p        uint32 // object: offset in perm of its key tokens sorted by key
}

// Doc is a parsed document. The zero value is ready for [Doc.Parse]; a Doc
// may be reused, and each Parse invalidates what the previous one returned
// ([V] handles, [Doc.Bytes] slices). Strings from [Doc.Str] and [Doc.Value]
// are independent copies.
type Doc struct {
	src   []byte
	toks  []token
	dec   []byte   // decoded escaped strings and float reprs
	perm  []uint32 // per object, its key tokens sorted by key
	stack []uint32
	opt   Options
	err   SyntaxError
	arena []byte // Value's string bytes, while building
}

// Parse parses src, one complete JSON document, under opt.
func Parse(src []byte, opt Options) (*Doc, error) {
	d := new(Doc)
	if err := d.Parse(src, opt); err != nil {
		return nil, err
	}
	return d, nil
}

// Valid reports whether src parses under opt.
func Valid(src []byte, opt Options) bool {
	var d Doc
	return d.Parse(src, opt) == nil
}

func (d *Doc) fail(msg string, off int) error {
	d.err = SyntaxError{msg, off}
	d.toks = d.toks[:0]
	return &SyntaxError{msg, off}
}

// plain marks the bytes a string scan passes over: everything but '"', '\\'
// and control characters (UTF-8 is validated once for the whole input).
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func ws(src []byte, i int) int {
	// Indented files spend most of their bytes in runs of spaces: skip them
	// eight at a time.
	for i < len(src) && isWS(src[i]) {
		i++
		for i+8 <= len(src) && binary.LittleEndian.Uint64(src[i:]) == 0x2020202020202020 {
			i += 8
		}
	}
	return i
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stringStop reports whether any of the 8 bytes of x is '"', '\\' or below
// 0x20 (exact for "any"; which byte is found by the byte loop).
func stringStop(x uint64) bool {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((x-lsb*0x20)&^x|(q-lsb)&^q|(b-lsb)&^b)&msb != 0
}

// skipPlain returns the first index at or after j that is not a plain
// string byte.
func skipPlain(src []byte, j int) int {
	for j+8 <= len(src) && !stringStop(binary.LittleEndian.Uint64(src[j:])) {
		j += 8
	}
	for j < len(src) && plain[src[j]] {
		j++
	}
	return j
}

const (
	stValue = iota
	stAfter
	stKey
)

// Parse parses src into d, replacing what d held. On error d holds nothing.
func (d *Doc) Parse(src []byte, opt Options) error {
	d.src = src
	d.toks, d.dec, d.perm, d.stack = d.toks[:0], d.dec[:0], d.perm[:0], d.stack[:0]
	d.opt = opt
	maxDepth := opt.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if uint64(len(src)) >= math.MaxUint32 {
		return d.fail("input too large", 0)
	}
	i := 0
	if len(src) >= 3 && src[0] == 0xef && src[1] == 0xbb && src[2] == 0xbf {
		if opt.BOM != BOMSkip {
			return d.fail("leading byte order mark", 0)
		}
		i = 3
	}
	if !utf8.Valid(src) {
		return d.fail("invalid UTF-8", firstInvalid(src))
	}
	if want := len(src)/24 + 16; cap(d.toks) < want { // indented files: ~26 bytes a token
		d.toks = make([]token, 0, want)
	}
	i = ws(src, i)
	state := stValue
	for {
		switch state {
		case stValue:
			if i >= len(src) {
				return d.fail("unexpected end of input", i)
			}
			if len(d.stack) > 0 {
				if t := &d.toks[d.stack[len(d.stack)-1]]; t.kind == Array {
					t.n++
				}
			}
			switch c := src[i]; {
			case c == '"':
				j, err := d.scanString(i)
				if err != nil {
					return err
				}
				i = j
				state = stAfter
			case c == '{' || c == '[':
				if len(d.stack) >= maxDepth {
					return d.fail("nesting too deep", i)
				}
				k := Object
				if c == '[' {
					k = Array
				}
				d.stack = append(d.stack, uint32(len(d.toks)))
				d.toks = append(d.toks, token{off: uint32(i), kind: k})
				i = ws(src, i+1)
				switch {
				case k == Object && i < len(src) && src[i] == '}':
					d.closeObject(i + 1)
					i++
					state = stAfter
				case k == Array && i < len(src) && src[i] == ']':
					d.closeArray(i + 1)
					i++
					state = stAfter
				case k == Object:
					state = stKey
				}
				continue
			case c == '-' || (c >= '0' && c <= '9'):
				j, err := d.scanNumber(i)
				if err != nil {
					return err
				}
				i = j
				state = stAfter
			case c == 't':
				if err := d.lit(i, "true", fTrue); err != nil {
					return err
				}
				i += 4
				state = stAfter
			case c == 'f':
				if err := d.lit(i, "false", 0); err != nil {
					return err
				}
				i += 5
				state = stAfter
			case c == 'n':
				if err := d.lit(i, "null", 0); err != nil {
					return err
				}
				i += 4
				state = stAfter
			default:
				return d.fail("unexpected character", i)
			}
		case stAfter:
			i = ws(src, i)
			if len(d.stack) == 0 {
				if i != len(src) {
					return d.fail("unexpected data after the top-level value", i)
				}
				return nil
			}
			if i >= len(src) {
				return d.fail("unexpected end of input", i)
			}
			top := d.stack[len(d.stack)-1]
			c := src[i]
			if d.toks[top].kind == Object {
				switch c {
				case ',':
					i = ws(src, i+1)
					state = stKey
				case '}':
					if err := d.closeObject(i + 1); err != nil {
						return err
					}
					i++
				default:
					return d.fail("expected ',' or '}'", i)
				}
			} else {
				switch c {
				case ',':
					i = ws(src, i+1)
					state = stValue
				case ']':
					d.closeArray(i + 1)
					i++
				default:
					return d.fail("expected ',' or ']'", i)
				}
			}
		case stKey:
			if i >= len(src) || src[i] != '"' {
				return d.fail("expected object key", i)
			}
			d.toks[d.stack[len(d.stack)-1]].n++
			j, err := d.scanString(i)
			if err != nil {
				return err
			}
			i = ws(src, j)
			if i >= len(src) || src[i] != ':' {
				return d.fail("expected ':'", i)
			}
			i = ws(src, i+1)
			state = stValue
		}
	}
}

func firstInvalid(src []byte) int {
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(src)
}

func (d *Doc) lit(i int, word string, flags uint8) error {
	if len(d.src)-i < len(word) || string(d.src[i:i+len(word)]) != word {
		return d.fail("invalid literal", i)
	}
	k := Null
	if word != "null" {
		k = Bool
	}
	d.toks = append(d.toks, token{off: uint32(i), end: uint32(i + len(word)), kind: k, flags: flags})
	return nil
}

func (d *Doc) closeArray(end int) {
	idx := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	t := &d.toks[idx]
	t.end, t.a = uint32(end), uint32(len(d.toks))
}

// next returns the index of the token after the subtree starting at v.
func (d *Doc) next(v uint32) uint32 {
	if k := d.toks[v].kind; k == Array || k == Object {
		return d.toks[v].a
	}
	return v + 1
}

// closeObject ends the innermost object: it records the member keys sorted
// by key (code-point order, which is UTF-8 byte order) and refuses
// duplicates, which are equal neighbours in that order.
func (d *Doc) closeObject(end int) error {
	idx := d.stack[len(d.stack)-1]
	d.stack = d.stack[:len(d.stack)-1]
	t := &d.toks[idx]
	t.end, t.a = uint32(end), uint32(len(d.toks))
	p0 := len(d.perm)
	t.p = uint32(p0)
	n := int(t.n)
	k := idx + 1
	for range n {
		d.perm = append(d.perm, k)
		k = d.next(k + 1)
	}
	keys := d.perm[p0:]
	sorted := true
	for i := 1; i < len(keys); i++ {
		if c := compareBytes(d.keyBytes(keys[i-1]), d.keyBytes(keys[i])); c >= 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return nil
	}
	if len(keys) <= 24 {
		for i := 1; i < len(keys); i++ {
			x := keys[i]
			kx := d.keyBytes(x)
			j := i
			for j > 0 && compareBytes(d.keyBytes(keys[j-1]), kx) > 0 {
				keys[j] = keys[j-1]
				j--
			}
			keys[j] = x
		}
	} else {
		slices.SortFunc(keys, func(a, b uint32) int { return compareBytes(d.keyBytes(a), d.keyBytes(b)) })
	}
	for i := 1; i < len(keys); i++ {
		if compareBytes(d.keyBytes(keys[i-1]), d.keyBytes(keys[i])) == 0 {
			return d.fail("duplicate key", int(d.toks[max(keys[i-1], keys[i])].off))
		}
	}
	return nil
}

func compareBytes(a, b []byte) int { return bytes.Compare(a, b) }

// keyBytes returns the decoded bytes of string token k.
func (d *Doc) keyBytes(k uint32) []byte {
	t := &d.toks[k]
	if t.flags&fEscaped != 0 {
		return d.dec[t.a : t.a+t.n]
	}
	return d.src[t.off+1 : t.end-1]
}

// scanString scans the string token starting at the quote at i and returns
// the offset after its closing quote.
func (d *Doc) scanString(i int) (int, error) {
	src := d.src
	j := skipPlain(src, i+1)
	if j >= len(src) {
		return 0, d.fail("unterminated string", i)
	}
	switch c := src[j]; {
	case c == '"':
		d.toks = append(d.toks, token{off: uint32(i), end: uint32(j + 1), kind: String})
		return j + 1, nil
	case c < 0x20:
		return 0, d.fail("control character in string", j)
	}
	// An escape: decode the whole string into dec.
	return d.scanEscaped(i, len(d.dec))
}

// scanEscaped decodes the string token at i (which has an escape) into dec
// from offset a, and appends its token.
func (d *Doc) scanEscaped(i, a int) (int, error) {
	src := d.src
	j := i + 1
	for {
		s := j
		j = skipPlain(src, j)
		d.dec = append(d.dec, src[s:j]...)
		if j >= len(src) {
			return 0, d.fail("unterminated string", i)
		}
		c := src[j]
		if c == '"' {
			d.toks = append(d.toks, token{off: uint32(i), end: uint32(j + 1), kind: String, flags: fEscaped,
				a: uint32(a), n: uint32(len(d.dec) - a)})
			return j + 1, nil
		}
		if c < 0x20 {
			return 0, d.fail("control character in string", j)
		}
		// c == '\\'
		if j+1 >= len(src) {
			return 0, d.fail("unterminated escape", j)
		}
		e := src[j+1]
		switch e {
		case '"', '\\', '/':
			d.dec = append(d.dec, e)
		case 'b':
			d.dec = append(d.dec, '\b')
		case 'f':
			d.dec = append(d.dec, '\f')
		case 'n':
			d.dec = append(d.dec, '\n')
		case 'r':
			d.dec = append(d.dec, '\r')
		case 't':
			d.dec = append(d.dec, '\t')
		case 'u':
			r, ok := hex4(src, j+2)
			if !ok {
				return 0, d.fail("invalid \\u escape", j)
			}
			switch {
			case r >= 0xd800 && r < 0xdc00:
				r2, ok := rune(0), false
				if j+7 < len(src) && src[j+6] == '\\' && src[j+7] == 'u' {
					r2, ok = hex4(src, j+8)
					if !ok {
						return 0, d.fail("invalid \\u escape", j+6)
					}
				}
				if !ok || r2 < 0xdc00 || r2 > 0xdfff {
					return 0, d.fail("lone surrogate escape", j)
				}
				r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
				j += 6
			case r >= 0xdc00 && r <= 0xdfff:
				return 0, d.fail("lone surrogate escape", j)
			}
			d.dec = utf8.AppendRune(d.dec, r)
			j += 4
		default:
			return 0, d.fail("invalid escape", j)
		}
		j += 2
	}
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
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
	return r, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber scans a number token at i. Under FloatRepr a float is parsed
// now (refused when it overflows) and its repr stored in dec.
func (d *Doc) scanNumber(i int) (int, error) {
	src := d.src
	start := i
	if src[i] == '-' {
		i++
	}
	switch {
	case i < len(src) && src[i] == '0':
		i++
	case i < len(src) && isDigit(src[i]):
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	default:
		return 0, d.fail("invalid number", start)
	}
	intEnd := i
	float := false
	if i < len(src) && src[i] == '.' {
		float = true
		i++
		if i >= len(src) || !isDigit(src[i]) {
			return 0, d.fail("invalid number", start)
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		float = true
		i++
		if i < len(src) && (src[i] == '+' || src[i] == '-') {
			i++
		}
		if i >= len(src) || !isDigit(src[i]) {
			return 0, d.fail("invalid number", start)
		}
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	t := token{off: uint32(start), end: uint32(i), kind: Number}
	if !float {
		digits := intEnd - start
		if src[start] == '-' {
			digits--
		}
		if d.opt.MaxIntDigits > 0 && digits > d.opt.MaxIntDigits {
			return 0, d.fail("integer literal too long", start)
		}
	} else {
		t.flags = fFloat
		if d.opt.Floats == FloatRepr {
			f, err := strconv.ParseFloat(unsafe.String(&src[start], i-start), 64)
			if err != nil || math.IsInf(f, 0) {
				return 0, d.fail("number out of range", start)
			}
			t.a = uint32(len(d.dec))
			d.dec = AppendFloat(d.dec, f)
			t.n = uint32(len(d.dec)) - t.a
		}
	}
	d.toks = append(d.toks, t)
	return i, nil
}
