package ledger

import (
	"encoding/json"
	"strconv"
	"time"
)

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
	if c, err := canonicalInteger(s); err != nil || c != s {
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

// isKind reports whether s matches ^[a-z][a-z0-9-]{1,95}$.
func isKind(s string) bool {
	if len(s) < 2 || len(s) > 96 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
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
// a real calendar instant (spec §10).
func parseTime(s string) (time.Time, bool) {
	if !reTimestamp.MatchString(s) {
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

// jsonEqual compares two parsed trees by their canonical form.
func jsonEqual(a, b any) bool {
	ca, err1 := canonical(a)
	cb, err2 := canonical(b)
	return err1 == nil && err2 == nil && string(ca) == string(cb)
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
