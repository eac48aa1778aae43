package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// ledger's JSON is internal/util/pyjson under these rules: strict
// UTF-8, no duplicate key, no lone surrogate, no BOM, nesting at most 512,
// integers exact and unbounded; floats parse but have no canonical form.
var ledgerJSON = pyjson.Options{MaxDepth: 512, Floats: pyjson.FloatRefuse}

var errJSON = errors.New("invalid json")

// errNotCanonical reports a value that has no canonical form (a number that is
// not an integer) or bytes that differ from their canonical form.
var errNotCanonical = errors.New("not canonical")

type jsonScratch struct {
	doc pyjson.Doc
	buf []byte
}

var jsonPool = sync.Pool{New: func() any { return new(jsonScratch) }}

// parseJSON parses one JSON document into map[string]any, []any, string,
// json.Number, bool and nil (pyjson's map builder). Duplicate object keys,
// invalid UTF-8, lone surrogates and trailing data are errors (fail closed);
// numbers stay exact (json.Number).
func parseJSON(b []byte) (any, error) {
	s := jsonPool.Get().(*jsonScratch)
	defer jsonPool.Put(s)
	if err := s.doc.Parse(b, ledgerJSON); err != nil {
		return nil, fmt.Errorf("parsing json: %v: %w", err, errJSON)
	}
	return s.doc.Value(s.doc.Root()), nil
}

// canonical returns the byte form of Python's json.dumps(v, sort_keys=True,
// separators=(",",":"), ensure_ascii=False) for a tree produced by parseJSON
// (docs/ledger.md, Canonical objects). Numbers must be integers.
func canonical(v any) ([]byte, error) { return canonicalSuffix(v, "") }

// canonicalLF is canonical(v) followed by one LF: the byte form of every
// content-addressed object.
func canonicalLF(v any) ([]byte, error) { return canonicalSuffix(v, "\n") }

// canonicalSuffix is canonical(v) + suffix in a slice of exactly that size:
// written into a pooled buffer and copied once, instead of grown by
// doubling from nothing.
func canonicalSuffix(v any, suffix string) ([]byte, error) {
	s := canonPool.Get().(*canonScratch)
	defer canonPool.Put(s)
	b, err := appendCanonical(s.a[:0], v)
	s.a = b
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(b)+len(suffix))
	copy(out[copy(out, b):], suffix)
	return out, nil
}

// isCanonicalLF reports whether raw is exactly canonical(v) + LF, without
// keeping the canonical form.
func isCanonicalLF(v any, raw []byte) bool {
	s := canonPool.Get().(*canonScratch)
	defer canonPool.Put(s)
	b, err := appendCanonical(s.a[:0], v)
	s.a = b
	return err == nil && len(raw) == len(b)+1 && raw[len(b)] == '\n' && bytes.Equal(raw[:len(b)], b)
}

// checkCanonicalLF parses raw and reports whether raw is exactly
// canonical(parse(raw)) + LF. It returns the parsed value either way when raw
// parses. The canonical form is written from the tokens (one parse), so
// duplicate keys and invalid UTF-8 fail at the parse.
func checkCanonicalLF(raw []byte) (any, error) {
	s := jsonPool.Get().(*jsonScratch)
	defer jsonPool.Put(s)
	d := &s.doc
	if err := d.Parse(raw, ledgerJSON); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotCanonical, err)
	}
	v := d.Value(d.Root())
	var err error
	s.buf, err = d.AppendCanonical(s.buf[:0], d.Root())
	if err != nil {
		return v, fmt.Errorf("%w: %v", errNotCanonical, err)
	}
	if len(raw) != len(s.buf)+1 || raw[len(raw)-1] != '\n' || !bytes.Equal(raw[:len(s.buf)], s.buf) {
		return v, fmt.Errorf("%w: bytes differ from the canonical form", errNotCanonical)
	}
	return v, nil
}

// CheckCanonical reports whether raw is canonical JSON followed by exactly one
// LF, the rule every content-addressed OpenAdapt object obeys (docs/ledger.md,
// Canonical objects). It returns an error wrapping [ErrNotCanonical]
// otherwise.
func CheckCanonical(raw []byte) error {
	if _, err := checkCanonicalLF(raw); err != nil {
		return fmt.Errorf("%w: %v", ErrNotCanonical, err)
	}
	return nil
}

// Small accessors over trees produced by parseJSON. Every accessor reports
// ok=false for a missing key or a value of the wrong type, so callers turn any
// shape problem into a verdict, never a panic.

func asObj(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

func asList(v any) ([]any, bool) {
	l, ok := v.([]any)
	return l, ok
}

// exactKeys reports whether m has exactly the given keys.
func exactKeys(m map[string]any, keys ...string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func getStr(m map[string]any, k string) (string, bool) {
	s, ok := m[k].(string)
	return s, ok
}

// getStrOrNull returns (s, isNull, ok).
func getStrOrNull(m map[string]any, k string) (string, bool, bool) {
	v, present := m[k]
	if !present {
		return "", false, false
	}
	if v == nil {
		return "", true, true
	}
	s, ok := v.(string)
	return s, false, ok
}

// getInt returns an exact JSON integer that fits an int64.
func getInt(m map[string]any, k string) (int64, bool) {
	n, ok := m[k].(json.Number)
	if !ok {
		return 0, false
	}
	s := string(n)
	if c, err := pyjson.CanonicalInt(s); err != nil || c != s {
		return 0, false
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return i, true
}

func getBool(m map[string]any, k string) (bool, bool) {
	b, ok := m[k].(bool)
	return b, ok
}

// isDigest reports whether s is "sha256:" + 64 lowercase hex digits. It is
// hand-written: it runs for every registry entry field.
func isDigest(s string) bool {
	if len(s) != 71 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < 71; i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func getDigest(m map[string]any, k string) (string, bool) {
	s, ok := getStr(m, k)
	return s, ok && isDigest(s)
}

// parseTime parses a whole-second UTC timestamp YYYY-MM-DDTHH:MM:SSZ that is
// a real calendar instant (docs/ledger.md, Time).
func parseTime(s string) (time.Time, bool) {
	if !isTimestamp(s) {
		return time.Time{}, false
	}
	t, err := time.Parse("2006-01-02T15:04:05Z", s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

func getTime(m map[string]any, k string) (time.Time, bool) {
	s, ok := getStr(m, k)
	if !ok {
		return time.Time{}, false
	}
	return parseTime(s)
}

// getTimeOrNull returns (t, isNull, ok).
func getTimeOrNull(m map[string]any, k string) (time.Time, bool, bool) {
	v, present := m[k]
	if !present {
		return time.Time{}, false, false
	}
	if v == nil {
		return time.Time{}, true, true
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, false, false
	}
	t, ok := parseTime(s)
	return t, false, ok
}

// without returns a shallow copy of m minus the given keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// pick returns a shallow copy of m holding only the given keys that exist.
func pick(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// canonScratch holds the buffers of canonical forms that are compared or
// hashed and then dropped (jsonEqual, domainDigest): written into a reused
// buffer, they cost no allocation. They were about 0.8 MB of the 2.5 MB
// that verifying the embedded snapshot allocates (BENCHMARKS.md, Start-up).
type canonScratch struct{ a, b []byte }

var canonPool = sync.Pool{New: func() any { return new(canonScratch) }}

// appendCanonical appends canonical(v) to buf (an error as canonical's).
func appendCanonical(buf []byte, v any) ([]byte, error) {
	b, err := pyjson.AppendValue(buf, v, pyjson.FloatRefuse)
	if err != nil {
		return buf, fmt.Errorf("%w: %v", errNotCanonical, err)
	}
	return b, nil
}

// jsonEqual compares two parsed trees by their canonical form.
func jsonEqual(a, b any) bool {
	s := canonPool.Get().(*canonScratch)
	defer canonPool.Put(s)
	var err1, err2 error
	s.a, err1 = appendCanonical(s.a[:0], a)
	s.b, err2 = appendCanonical(s.b[:0], b)
	return err1 == nil && err2 == nil && bytes.Equal(s.a, s.b)
}

// sortedUniqueNonEmpty reports whether l is a non-empty, sorted list of
// unique non-empty strings, and returns it.
func sortedUniqueNonEmpty(v any) ([]string, bool) {
	l, ok := asList(v)
	if !ok || len(l) == 0 {
		return nil, false
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok || s == "" {
			return nil, false
		}
		if i > 0 && s <= out[i-1] {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// writeCanonicalString writes s as canonical JSON (docs/ledger.md, Canonical
// objects) to buf.
func writeCanonicalString(buf *bytes.Buffer, s string) {
	buf.Write(pyjson.AppendString(buf.AvailableBuffer(), s))
}
