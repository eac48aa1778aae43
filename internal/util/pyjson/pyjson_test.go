package pyjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsoncases"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsonoracle"
)

// flowOpts are bundle's input rules (docs/bundle.md, Canonical JSON).
var flowOpts = Options{MaxIntDigits: PythonIntMaxDigits}

// ledgerOpts are ledger's (docs/ledger.md, Canonical objects).
var ledgerOpts = Options{MaxDepth: 512, Floats: FloatRefuse}

func canon(t testing.TB, src string, opt Options) (string, error) {
	t.Helper()
	d, err := Parse([]byte(src), opt)
	if err != nil {
		return "", err
	}
	out, err := d.AppendCanonical(nil, d.Root())
	return string(out), err
}

func TestAppendFloat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   float64
		want string
	}{
		{480.0, "480.0"}, {1e-05, "1e-05"}, {1e+16, "1e+16"}, {1234567.0, "1234567.0"},
		{0.30000000000000004, "0.30000000000000004"}, {5e-324, "5e-324"},
		{1.7976931348623157e+308, "1.7976931348623157e+308"}, {math.Copysign(0, -1), "-0.0"}, {0, "0.0"},
		{123456789012345678.0, "1.2345678901234568e+17"}, {0.0001, "0.0001"}, {0.00012345, "0.00012345"},
		{9999999999999998.0, "9999999999999998.0"}, {2.5e-7, "2.5e-07"}, {1e22, "1e+22"}, {-1.5, "-1.5"},
		{-1e-05, "-1e-05"}, {1.5e300, "1.5e+300"}, {100000.0, "100000.0"}, {0.1, "0.1"},
		{2.2250738585072014e-308, "2.2250738585072014e-308"}, {123456789.123, "123456789.123"},
		{1e100, "1e+100"}, {1.2e-100, "1.2e-100"},
	}
	for _, tt := range tests {
		if got := FormatFloat(tt.in); got != tt.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

const vectorsDir = "../../../testdata/flow"

// TestCanonicalJSONCases runs the canonical_json_cases of the vectors
// MANIFEST (27 floats computed by Python, string escapes, key order); bundle
// runs the same cases through its CanonicalJSON.
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
		got, err := canon(t, f.Literal, flowOpts)
		if err != nil || got != f.Canonical {
			t.Errorf("float %s: got %q, %v; want %q", f.Literal, got, err, f.Canonical)
		}
		d, _ := Parse([]byte(f.Literal), flowOpts)
		if d.IsInt(d.Root()) != f.IsInt {
			t.Errorf("float %s: IsInt = %v, want %v", f.Literal, d.IsInt(d.Root()), f.IsInt)
		}
	}
	for _, s := range c.Strings {
		raw, in, err := s.Value()
		if err != nil {
			t.Fatal(err)
		}
		d, err := Parse(in, flowOpts)
		if err != nil {
			t.Fatalf("string case %s: %v", s.Hex, err)
		}
		if got := d.Str(d.Root()); got != raw {
			t.Fatalf("string case %s: parsed %q", s.Hex, got)
		}
		if got, _ := d.AppendCanonical(nil, d.Root()); string(got) != s.Canonical {
			t.Errorf("string case %s: got %q, want %q", s.Hex, got, s.Canonical)
		}
		if got := string(AppendString(nil, []byte(raw))); got != s.Canonical {
			t.Errorf("string case %s: AppendString %q, want %q", s.Hex, got, s.Canonical)
		}
	}
	obj, err := c.KeyOrderInput()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := canon(t, obj, flowOpts); err != nil || got != c.KeyOrder.Canonical {
		t.Errorf("key order: got %s, %v; want %s", got, err, c.KeyOrder.Canonical)
	}
}

// TestCanonicalEscapes runs the shared escape table (bundle runs it too).
func TestCanonicalEscapes(t *testing.T) {
	t.Parallel()
	for _, tt := range jsoncases.Escapes {
		got, err := canon(t, tt.In, flowOpts)
		if tt.Want == "" {
			if err == nil {
				t.Errorf("canonical(%q) = %q, want an error", tt.In, got)
			}
			continue
		}
		if err != nil || got != tt.Want {
			t.Errorf("canonical(%q) = %q, %v; want %q", tt.In, got, err, tt.Want)
		}
	}
}

// TestInvalid runs the shared refusal table (bundle runs it too): every
// input is a SyntaxError with an offset in range that does not carry the
// input, and the old parser refused it as well.
func TestInvalid(t *testing.T) {
	t.Parallel()
	for name, in := range jsoncases.Invalid(DefaultMaxDepth) {
		if _, err := Parse([]byte(in), flowOpts); err == nil {
			t.Errorf("%s: Parse accepted %q", name, in)
		} else {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(in) {
				t.Errorf("%s: error %v is not a SyntaxError with an offset in range", name, err)
			}
			if len(in) > 8 && strings.Contains(err.Error(), in) {
				t.Errorf("%s: error text carries the input", name)
			}
		}
		if _, err := jsonoracle.CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("%s: the old parser accepted %q (the table is wrong)", name, in)
		}
	}
	if _, err := Parse([]byte("-"+strings.Repeat("9", 4300)), flowOpts); err != nil {
		t.Errorf("4300 digits rejected: %v", err)
	}
	if _, err := Parse([]byte(strings.Repeat("9", 5000)), ledgerOpts); err != nil {
		t.Errorf("ledger rules bound integer size: %v", err)
	}
	ok := strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth)
	if _, err := Parse([]byte(ok), flowOpts); err != nil {
		t.Errorf("depth %d rejected: %v", DefaultMaxDepth, err)
	}
	if _, err := Parse([]byte(ok), ledgerOpts); err == nil {
		t.Errorf("depth %d accepted under MaxDepth 512", DefaultMaxDepth)
	}
}

func TestBOM(t *testing.T) {
	t.Parallel()
	in := []byte("\xef\xbb\xbf {\"a\":1}")
	if _, err := Parse(in, Options{}); err == nil || err.(*SyntaxError).Msg != "leading byte order mark" {
		t.Errorf("BOMRefuse: %v", err)
	}
	d, err := Parse(in, Options{BOM: BOMSkip})
	if err != nil {
		t.Fatalf("BOMSkip: %v", err)
	}
	if out, _ := d.AppendCanonical(nil, d.Root()); string(out) != `{"a":1}` {
		t.Errorf("BOMSkip canonical %s", out)
	}
	// A BOM anywhere else is just a character.
	if _, err := Parse([]byte("{\"a\":\"\xef\xbb\xbf\"}"), Options{}); err != nil {
		t.Errorf("BOM inside a string: %v", err)
	}
	if _, err := Parse([]byte(" \xef\xbb\xbf{}"), Options{BOM: BOMSkip}); err == nil {
		t.Errorf("BOM after whitespace accepted")
	}
}

func TestFloatRefuse(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(`{"a":[1,1e400,2.5]}`), ledgerOpts)
	if err != nil {
		t.Fatalf("FloatRefuse parse: %v", err)
	}
	if _, err := d.AppendCanonical(nil, d.Root()); !errors.Is(err, ErrNotCanonical) {
		t.Errorf("FloatRefuse canonical error %v", err)
	}
	v := d.Value(d.Root())
	if _, err := AppendValue(nil, v, FloatRefuse); !errors.Is(err, ErrNotCanonical) {
		t.Errorf("AppendValue FloatRefuse error %v", err)
	}
	if _, err := AppendValue(nil, v, FloatRepr); err == nil {
		t.Errorf("AppendValue FloatRepr accepted 1e400")
	}
	out, err := AppendValue(nil, map[string]any{"a": json.Number("2.50"), "b": 0.1, "c": json.Number("-0"), "d": json.Number("007")}, FloatRepr)
	if err != nil || string(out) != `{"a":2.5,"b":0.1,"c":0,"d":7}` {
		t.Errorf("AppendValue FloatRepr = %s, %v", out, err)
	}
	for _, bad := range []any{json.Number(""), json.Number("-"), json.Number("1x"), struct{}{}, math.Inf(1), []int{1}} {
		if _, err := AppendValue(nil, bad, FloatRepr); !errors.Is(err, ErrNotCanonical) {
			t.Errorf("AppendValue(%#v) error %v", bad, err)
		}
	}
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte(`{"s":"x\ty","n":-0,"f":1.50,"t":true,"z":false,"nul":null,"a":[1,[2],{"k":3}],"o":{"b":1,"a":2}}`), flowOpts)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Root()
	if d.Kind(r) != Object || d.Len(r) != 8 {
		t.Fatalf("root kind %v len %d", d.Kind(r), d.Len(r))
	}
	if d.Str(d.Get(r, "s")) != "x\ty" || !d.StrIs(d.Get(r, "s"), "x\ty") || string(d.Raw(d.Get(r, "s"))) != `"x\ty"` {
		t.Errorf("string accessors")
	}
	if !d.IsInt(d.Get(r, "n")) || string(d.Bytes(d.Get(r, "n"))) != "-0" || !d.IsFloat(d.Get(r, "f")) {
		t.Errorf("number accessors")
	}
	if !d.True(d.Get(r, "t")) || d.False(d.Get(r, "t")) || !d.False(d.Get(r, "z")) || !d.IsNull(d.Get(r, "nul")) {
		t.Errorf("literal accessors")
	}
	if d.Get(r, "missing") != None || !d.IsNull(d.Get(r, "missing")) || d.Kind(d.Get(d.Get(r, "s"), "x")) != Invalid {
		t.Errorf("absent values")
	}
	var kinds []Kind
	for e := range d.Elems(d.Get(r, "a")) {
		kinds = append(kinds, d.Kind(e))
	}
	if len(kinds) != 3 || kinds[0] != Number || kinds[1] != Array || kinds[2] != Object {
		t.Errorf("Elems kinds %v", kinds)
	}
	var keys []string
	for k, v := range d.Members(d.Get(r, "o")) {
		keys = append(keys, d.Str(k)+"="+string(d.Raw(v)))
	}
	if strings.Join(keys, ",") != "b=1,a=2" {
		t.Errorf("Members in source order: %v", keys)
	}
	for k := range d.Members(r) {
		if d.StrIs(k, "o") || d.StrIs(k, "a") {
			d.Omit(k)
		}
	}
	out, _ := d.AppendCanonicalWith(nil, r, "m", []byte(`"inserted"`))
	want := `{"f":1.5,"m":"inserted","n":0,"nul":null,"s":"x\ty","t":true,"z":false}`
	if string(out) != want {
		t.Errorf("omit + insert:\n got %s\nwant %s", out, want)
	}
	out, _ = d.AppendCanonicalWith(nil, r, "zz", []byte(`1`))
	if !bytes.HasSuffix(out, []byte(`,"zz":1}`)) {
		t.Errorf("insert last: %s", out)
	}
	out, _ = d.AppendCanonicalWith(nil, r, "", []byte(`1`))
	if !bytes.HasPrefix(out, []byte(`{"":1,"f"`)) {
		t.Errorf("insert first: %s", out)
	}
	// Reuse: a second Parse forgets the first (omit marks included).
	if err := d.Parse([]byte(`{"o":1}`), flowOpts); err != nil {
		t.Fatal(err)
	}
	if out, _ := d.AppendCanonical(nil, d.Root()); string(out) != `{"o":1}` {
		t.Errorf("after reuse: %s", out)
	}
	if err := d.Parse([]byte(`{"o":`), flowOpts); err == nil || d.Root() != None {
		t.Errorf("a failed Parse must leave nothing: %v %v", err, d.Root())
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	src := []byte(`{"a":[1,-0,2.5e3,"x\u00e9",true,false,null],"b":{},"c":[],"\u00e9":"y"}`)
	d, err := Parse(src, ledgerOpts)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Value(d.Root())
	var want any
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("Value:\n got %s\nwant %s", gb, wb)
	}
	// The tree does not alias the Doc's buffers.
	copy(src, bytes.Repeat([]byte("#"), len(src)))
	d.Parse([]byte(`[0]`), ledgerOpts)
	if gb2, _ := json.Marshal(got); string(gb2) != string(gb) {
		t.Errorf("Value aliases its input: %s", gb2)
	}
}

// jsonFiles returns every JSON file under testdata (the vectors, ledger
// snapshot, registry, skills), the seed set of the differential tests.
func jsonFiles(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir("../../../testdata", func(p string, de os.DirEntry, err error) error {
		if err == nil && !de.IsDir() && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonl")) {
			if b, err := os.ReadFile(p); err == nil && len(b) < 8<<20 {
				out[p] = b
			}
		}
		return nil
	})
	if len(out) < 50 {
		t.Fatalf("only %d JSON files under testdata", len(out))
	}
	return out
}

// TestTestdataAgainstOracle: every JSON file in testdata gets byte-identical
// canonical output (or the same refusal) from pyjson and the old writers.
func TestTestdataAgainstOracle(t *testing.T) {
	t.Parallel()
	n := 0
	for p, b := range jsonFiles(t) {
		checkFlowOracle(t, b)
		checkLedgerOracle(t, b)
		if Valid(b, flowOpts) {
			n++
		}
		_ = p
	}
	if n < 50 {
		t.Errorf("only %d files parsed", n)
	}
}

// TestUnmarshal: what encoding/json alone accepts but the strict core
// refuses never reaches the struct.
func TestUnmarshal(t *testing.T) {
	type rec struct {
		Phase string `json:"phase"`
	}
	var r rec
	if err := Unmarshal([]byte(`{"phase":"running"}`), Options{}, &r); err != nil || r.Phase != "running" {
		t.Fatalf("good document: %v %+v", err, r)
	}
	for name, in := range map[string]string{
		"duplicate key":  `{"phase":"running","phase":"terminal"}`,
		"nested dup":     `{"phase":"x","o":{"a":1,"a":2}}`,
		"invalid UTF-8":  "{\"phase\":\"\xff\"}",
		"trailing":       `{"phase":"x"} {}`,
		"lone surrogate": `{"phase":"\ud800"}`,
	} {
		r = rec{}
		if err := Unmarshal([]byte(in), Options{}, &r); err == nil {
			t.Errorf("%s: accepted (%+v)", name, r)
		} else if r.Phase != "" {
			t.Errorf("%s: decoded before refusing", name)
		}
	}
	if err := Unmarshal([]byte(`{"phase":1}`), Options{}, &r); err == nil {
		t.Error("a type mismatch was accepted")
	}
}
