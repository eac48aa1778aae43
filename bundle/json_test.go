package bundle

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	// The table plus the boundaries of fixed notation (CPython repr).
	tests := []struct {
		in   float64
		want string
	}{
		{480.0, "480.0"},
		{1e-05, "1e-05"},
		{1e+16, "1e+16"},
		{1234567.0, "1234567.0"},
		{0.30000000000000004, "0.30000000000000004"},
		{5e-324, "5e-324"},
		{1.7976931348623157e+308, "1.7976931348623157e+308"},
		{math.Copysign(0, -1), "-0.0"},
		{0, "0.0"},
		{123456789012345678.0, "1.2345678901234568e+17"},
		{0.0001, "0.0001"},
		{0.00012345, "0.00012345"},
		{9999999999999998.0, "9999999999999998.0"},
		{2.5e-7, "2.5e-07"},
		{1e22, "1e+22"},
		{-1.5, "-1.5"},
		{-1e-05, "-1e-05"},
		{1.5e300, "1.5e+300"},
		{100000.0, "100000.0"},
		{0.1, "0.1"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"},
		{123456789.123, "123456789.123"},
	}
	for _, tt := range tests {
		if got := formatFloat(tt.in); got != tt.want {
			t.Errorf("formatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// canonicalCases is the canonical_json_cases entry of the vectors MANIFEST.
type canonicalCases struct {
	Floats []struct {
		Literal   string `json:"literal"`
		Canonical string `json:"canonical"`
		IsInt     bool   `json:"is_integer_literal"`
	} `json:"floats"`
	Strings []struct {
		Hex       string `json:"value_utf8_hex"`
		Canonical string `json:"canonical"`
	} `json:"strings"`
	KeyOrder struct {
		Keys      []string `json:"input_keys_utf8_hex"`
		Canonical string   `json:"canonical"`
	} `json:"key_order"`
}

func loadCanonicalCases(t testing.TB) canonicalCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(vectorsDir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Vectors []json.RawMessage `json:"vectors"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, raw := range m.Vectors {
		var head struct{ Kind string }
		json.Unmarshal(raw, &head)
		if head.Kind == "canonical_json_cases" {
			var c canonicalCases
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	t.Fatal("no canonical_json_cases in MANIFEST")
	return canonicalCases{}
}

func TestCanonicalJSONCases(t *testing.T) {
	t.Parallel()
	c := loadCanonicalCases(t)
	if len(c.Floats) != 27 {
		t.Errorf("got %d float cases, want 27", len(c.Floats))
	}
	for _, f := range c.Floats {
		got, err := CanonicalJSON([]byte(f.Literal))
		if err != nil || string(got) != f.Canonical {
			t.Errorf("float %s: got %q, %v; want %q", f.Literal, got, err, f.Canonical)
		}
		v, _ := parseJSON([]byte(f.Literal))
		if v.isInt != f.IsInt {
			t.Errorf("float %s: isInt = %v, want %v", f.Literal, v.isInt, f.IsInt)
		}
	}
	for _, s := range c.Strings {
		raw, _ := hex.DecodeString(s.Hex)
		// Feed the value through the parser as a JSON string (escaping only
		// what JSON requires), then canonicalize.
		in := strconv.Quote(string(raw))
		in = strings.ReplaceAll(in, `\a`, `\u0007`)
		in = strings.ReplaceAll(in, `\v`, `\u000b`)
		in = strings.ReplaceAll(in, `\x00`, `\u0000`)
		in = strings.ReplaceAll(in, `\x1f`, `\u001f`)
		in = strings.ReplaceAll(in, `\x7f`, "\x7f")
		v, err := parseJSON([]byte(in))
		if err != nil {
			t.Fatalf("string case %s: %v (input %s)", s.Hex, err, in)
		}
		if v.s != string(raw) {
			t.Fatalf("string case %s: parsed %q", s.Hex, v.s)
		}
		if got := string(appendString(nil, string(raw))); got != s.Canonical {
			t.Errorf("string case %s: got %q, want %q", s.Hex, got, s.Canonical)
		}
	}
	var obj strings.Builder
	obj.WriteString("{")
	for i, k := range c.KeyOrder.Keys {
		raw, _ := hex.DecodeString(k)
		if i > 0 {
			obj.WriteString(",")
		}
		obj.Write(appendString(nil, string(raw)))
		obj.WriteString(":" + strconv.Itoa(i+1))
	}
	obj.WriteString("}")
	got, err := CanonicalJSON([]byte(obj.String()))
	if err != nil || string(got) != c.KeyOrder.Canonical {
		t.Errorf("key order: got %s, %v; want %s", got, err, c.KeyOrder.Canonical)
	}
}

func TestCanonicalJSONEscapes(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`"\u2028\u2029<>&/\/"`, "\"\u2028\u2029<>&//\""},
		{`"\ud83d\ude00"`, "\"\U0001F600\""},
		{`"\u0000\u001F\u007f"`, "\"\\u0000\\u001f\x7f\""},
		{`{"b":[1,2.0,-0,-0.0,true,false,null],"a":{}}`, `{"a":{},"b":[1,2.0,0,-0.0,true,false,null]}`},
		{" \t\r\n[ ] ", "[]"},
		{`123456789012345678901234567890`, `123456789012345678901234567890`},
		{`1e-99999999999999999999`, `0.0`},
		{`0e99999999999999999999`, `0.0`},
		{`1e99999999999999999999`, ``},
		{`1e-400`, `0.0`},
		{`-1e-400`, `-0.0`},
	}
	for _, tt := range tests {
		got, err := CanonicalJSON([]byte(tt.in))
		if tt.want == "" {
			if err == nil {
				t.Errorf("CanonicalJSON(%q) = %q, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("CanonicalJSON(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	manyKeys := `{`
	for i := range 40 {
		manyKeys += `"k` + strconv.Itoa(i) + `":1,`
	}
	manyKeys += `"k7":2}`
	tests := map[string]string{
		"bom":                   "\xef\xbb\xbf{}",
		"invalid utf-8":         "{\"a\":\"\xff\"}",
		"invalid utf-8 in key":  "{\"\xc3\":1}",
		"utf-8 surrogate bytes": "{\"a\":\"\xed\xa0\x80\"}",
		"overlong utf-8":        "{\"a\":\"\xc0\xaf\"}",
		"lone high surrogate":   `{"a":"\ud83d"}`,
		"high then non-low":     `{"a":"\ud83d\u0041"}`,
		"lone low surrogate":    `{"a":"\ude00x"}`,
		"duplicate key":         `{"a":1,"a":2}`,
		"nested duplicate":      `{"a":{"b":1,"b":1}}`,
		"duplicate in array":    `{"a":[{"x":1,"x":1}]}`,
		"duplicate, many keys":  manyKeys,
		"NaN":                   `{"a":NaN}`,
		"Infinity":              `{"a":-Infinity}`,
		"overflow":              `{"a":1e400}`,
		"leading zero":          `{"a":01}`,
		"bare dot":              `{"a":1.}`,
		"plus sign":             `{"a":+1}`,
		"trailing comma":        `{"a":1,}`,
		"trailing data":         `{} {}`,
		"control char":          "{\"a\":\"\x01\"}",
		"bad escape":            `{"a":"\x"}`,
		"single quotes":         `{'a':1}`,
		"truncated":             `{"a":[1,2`,
		"empty":                 ``,
		"4301-digit integer":    `{"a":` + strings.Repeat("9", 4301) + `}`,
		"deep":                  strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	}
	for name, in := range tests {
		if _, err := parseJSON([]byte(in)); err == nil {
			t.Errorf("%s: parseJSON accepted %q", name, in)
		}
		if _, err := CanonicalJSON([]byte(in)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("%s: CanonicalJSON error %v, want ErrInvalidJSON", name, err)
		}
	}
	for _, top := range []string{`[]`, `"x"`, `1`, `null`, `true`} {
		if _, err := parseObject([]byte(top)); err == nil {
			t.Errorf("parseObject accepted top level %s", top)
		}
	}
	if _, err := parseJSON([]byte("-" + strings.Repeat("9", 4300))); err != nil {
		t.Errorf("4300 digits rejected: %v", err)
	}
	// Depth exactly at the limit is fine.
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := parseJSON([]byte(ok)); err != nil {
		t.Errorf("depth %d rejected: %v", maxDepth, err)
	}
}

// Every vector workflow.json canonicalizes idempotently and is valid JSON.
func TestCanonicalIdempotent(t *testing.T) {
	t.Parallel()
	for _, seed := range fuzzSeeds(t) {
		out, err := CanonicalJSON(seed)
		if err != nil {
			continue
		}
		again, err := CanonicalJSON(out)
		if err != nil {
			t.Fatalf("re-canonicalizing: %v", err)
		}
		if diff := cmp.Diff(string(out), string(again)); diff != "" {
			t.Fatalf("not idempotent (-first +second):\n%s", diff)
		}
	}
}

// fuzzSeeds returns the plaintext JSON files of the vectors plus small cases.
func fuzzSeeds(t testing.TB) [][]byte {
	seeds := [][]byte{[]byte(`{}`), []byte(`{"a":[1,2.5e-7,-0.0,"\u2028"]}`), []byte(baseWorkflow)}
	filepath.WalkDir(vectorsDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (d.Name() == "workflow.json" || d.Name() == "manifest.json") {
			if data, err := os.ReadFile(p); err == nil {
				seeds = append(seeds, data)
			}
		}
		return nil
	})
	return seeds
}

// FuzzCanonicalJSON: the canonicalizer never panics; what it accepts is valid
// JSON; its output is valid JSON, and canonicalizing the output is the identity.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Add([]byte(`{"a":"\ud800"}`))
	f.Add([]byte(`[1e400]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CanonicalJSON(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("error %v does not wrap ErrInvalidJSON", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		if !json.Valid(out) {
			t.Fatalf("produced invalid JSON %q", out)
		}
		again, err := CanonicalJSON(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("round trip: %q -> %q (%v)", out, again, err)
		}
	})
}
