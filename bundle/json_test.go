package bundle

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsoncases"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsonoracle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// TestCanonicalJSONCases runs the vectors' canonical_json_cases (shared with
// internal/util/pyjson's tests) through CanonicalJSON.
func TestCanonicalJSONCases(t *testing.T) {
	t.Parallel()
	c, err := jsoncases.Load(vectorsDir)
	if err != nil {
		t.Fatal(err)
	}
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
		_, in, err := s.Value()
		if err != nil {
			t.Fatal(err)
		}
		if got, err := CanonicalJSON(in); err != nil || string(got) != s.Canonical {
			t.Errorf("string case %s: got %q, %v; want %q", s.Hex, got, err, s.Canonical)
		}
	}
	obj, err := c.KeyOrderInput()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := CanonicalJSON([]byte(obj)); err != nil || string(got) != c.KeyOrder.Canonical {
		t.Errorf("key order: got %s, %v; want %s", got, err, c.KeyOrder.Canonical)
	}
}

// TestCanonicalJSONEscapes runs the shared escape table through CanonicalJSON.
func TestCanonicalJSONEscapes(t *testing.T) {
	t.Parallel()
	for _, tt := range jsoncases.Escapes {
		got, err := CanonicalJSON([]byte(tt.In))
		if tt.Want == "" {
			if err == nil {
				t.Errorf("CanonicalJSON(%q) = %q, want an error", tt.In, got)
			}
			continue
		}
		if err != nil || string(got) != tt.Want {
			t.Errorf("CanonicalJSON(%q) = %q, %v; want %q", tt.In, got, err, tt.Want)
		}
	}
}

// TestInvalidJSON: every input of the shared refusal table is ErrInvalidJSON;
// only objects are workflow documents.
func TestInvalidJSON(t *testing.T) {
	t.Parallel()
	for name, in := range jsoncases.Invalid(maxDepth) {
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

// checkDigestOracle: the content digest (with the schema-v2 default
// removals) agrees
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
