package bundle

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/pyjson"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsonoracle"
)

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
		d, _ := pyjson.Parse([]byte(f.Literal), flowJSON)
		if d.IsInt(d.Root()) != f.IsInt {
			t.Errorf("float %s: isInt = %v, want %v", f.Literal, d.IsInt(d.Root()), f.IsInt)
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
		d, err := pyjson.Parse([]byte(in), flowJSON)
		if err != nil {
			t.Fatalf("string case %s: %v (input %s)", s.Hex, err, in)
		}
		if d.Str(d.Root()) != string(raw) {
			t.Fatalf("string case %s: parsed %q", s.Hex, d.Str(d.Root()))
		}
		if got, _ := CanonicalJSON([]byte(in)); string(got) != s.Canonical {
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
		obj.Write(pyjson.AppendString(nil, raw))
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
		if _, err := CanonicalJSON([]byte(in)); !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("%s: CanonicalJSON error %v, want ErrInvalidJSON", name, err)
		}
	}
	for _, top := range []string{`[]`, `"x"`, `1`, `null`, `true`} {
		if err := parseObject(new(pyjson.Doc), []byte(top)); err == nil {
			t.Errorf("parseObject accepted top level %s", top)
		}
	}
	if _, err := CanonicalJSON([]byte("-" + strings.Repeat("9", 4300))); err != nil {
		t.Errorf("4300 digits rejected: %v", err)
	}
	// Depth exactly at the limit is fine.
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	if _, err := CanonicalJSON([]byte(ok)); err != nil {
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

// testDigest is the content digest as the loader computes it, over the
// embedded manifest's file_hashes ({} when there is none).
func testDigest(data []byte) (string, error) {
	d := new(pyjson.Doc)
	if err := parseObject(d, data); err != nil {
		return "", err
	}
	files := pyjson.None
	if fh := d.Get(d.Get(d.Root(), "manifest"), "file_hashes"); d.Kind(fh) == pyjson.Object {
		files = fh
	}
	digest, _ := contentDigest(d, d, files, nil)
	return digest, nil
}

// checkDigestOracle: the content digest (§5 with the §5.1 omissions) agrees
// with the pre-pyjson implementation, refusals included.
func checkDigestOracle(t *testing.T, data []byte) {
	t.Helper()
	want, errW := jsonoracle.ContentDigest(data)
	got, errG := testDigest(data)
	if (errW == nil) != (errG == nil) || got != want {
		t.Fatalf("content digest differs from the old implementation: old %s %v, new %s %v", want, errW, got, errG)
	}
}

// TestDigestAgainstOracle: every vector workflow.json (and every seed) has
// the same content digest as before pyjson; for the verifying vectors that is
// also the manifest's own digest (checked by the vector tests).
func TestDigestAgainstOracle(t *testing.T) {
	t.Parallel()
	n := 0
	for _, seed := range fuzzSeeds(t) {
		checkDigestOracle(t, seed)
		n++
	}
	for _, v := range digestVariants() {
		checkDigestOracle(t, []byte(v))
	}
	if n < 20 {
		t.Fatalf("only %d seeds", n)
	}
}

// digestVariants exercise the schema_version migration and every omission
// position, with and without the default values.
func digestVariants() []string {
	step := `{"id":"s","field_label":null,"risk_explanation":null,"risk_review_required":false,"modifiers":[],` +
		`"drag_end_anchor":null,"selection_commit_key":null,"selection_region":null,` +
		`"anchor":{"template":"t","structural":{"frame_path":[]}},"wait_until":{"anchor":{"structural":{"frame_path":null}},` +
		`"operands":[{"operands":[{"anchor":{"structural":{"frame_path":[]}}}]}]},"guard":{"predicate":{"anchor":{"structural":{"frame_path":null}}}},` +
		`"effects":[{"new_records":[],"identity_field":"id"},{"new_records":[1],"identity_field":"mrn"}],` +
		`"api_binding":{"effects":[{"identity_field":"id"}]}}`
	graph := `{"entry":"a","states":{"a":{"kind":"action","step":` + step + `,"transitions":[{"guard":{"anchor":{"structural":{"frame_path":[]}}}},7],` +
		`"decision":{"revalidation":[{"anchor":{"structural":{"frame_path":null}}},"x"]}},"b":3}}`
	body := `"steps":[` + step + `,1],"program":` + graph + `,"subflows":{"g":` + graph + `,"h":null},` +
		`"interstitials":[{"dismiss_anchor":{"structural":{"frame_path":[]}},"detect":{"anchor":{"structural":{"frame_path":null}}},"clearance":{}},5],` +
		`"field_label":null,"manifest":{"content_digest":"x","file_hashes":{"templates/b":"1","templates/a":"2"}}`
	var out []string
	for _, sv := range []string{``, `"schema_version":2,`, `"schema_version":3,`, `"schema_version":1,`, `"schema_version":"2",`,
		`"schema_version":2.0,`, `"schema_version":-0,`, `"schema_version":null,`, `"schema_version":20,`} {
		out = append(out, `{`+sv+body+`}`)
	}
	out = append(out, `{"interstitials":[],"manifest":null}`, `{"interstitials":[1],"manifest":{}}`, `{"steps":{"a":1}}`,
		`{"manifest":{"file_hashes":[]}}`, `{"zzz":1,"aaa":{"schema_version":1}}`)
	return out
}

// FuzzContentDigest: the content digest agrees with the old implementation
// on any input.
func FuzzContentDigest(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	for _, v := range digestVariants() {
		f.Add([]byte(v))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDigestOracle(t, data)
	})
}
