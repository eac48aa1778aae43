package flowhelper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldDecodeObject is the frame parser wire.go had before it moved onto
// pyjson: a json.Decoder token walk that refused a duplicate key only
// at the top level and took a syntax error after the object for "no
// trailing data". It is kept here only as the differential's oracle.
func oldDecodeObject(b []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	obj := map[string]json.RawMessage{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, ok := kt.(string)
		if !ok {
			return nil, errors.New("bad key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := obj[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		obj[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return obj, nil
}

// tightened are the pyjson refusals of input the old parser accepted: each
// is input a conforming helper (Python dicts through json.dumps with
// ensure_ascii=True, allow_nan=False) never writes.
var tightened = map[string]bool{
	"duplicate key":                             true, // nested: Python dicts have none; encoding/json kept the last
	"invalid UTF-8":                             true, // the helper writes ASCII; encoding/json read U+FFFD
	"lone surrogate escape":                     true, // encoding/json read U+FFFD where Python has the surrogate
	"integer literal too long":                  true, // Python refuses to print it
	"nesting too deep":                          true, // beyond 1000 (encoding/json: 10000)
	"unexpected data after the top-level value": true, // the old walk took a syntax error there for "nothing more"
}

// checkFrameDifferential compares parseObject with oldDecodeObject on b.
func checkFrameDifferential(t *testing.T, b []byte) {
	t.Helper()
	old, errOld := oldDecodeObject(b)
	obj, errNew := parseObject(b)
	if errNew != nil {
		var se *pyjson.SyntaxError
		switch {
		case errors.Is(errNew, errNotObject):
			if errOld == nil {
				t.Fatalf("old parser accepted a non-object: %q", trunc(b))
			}
		case errors.As(errNew, &se):
			if errOld == nil && !tightened[se.Msg] {
				t.Fatalf("refused (%v) what the old parser accepted, for no documented reason: %q", errNew, trunc(b))
			}
			if want := fmt.Sprintf("%s at byte %d", se.Msg, se.Offset); errNew.Error() != want {
				t.Fatalf("error text %q", errNew.Error())
			}
		default:
			t.Fatalf("unexpected error type %T: %v", errNew, errNew)
		}
		return
	}
	if errOld != nil {
		t.Fatalf("accepted what the old parser refused (%v): %q", errOld, trunc(b))
	}
	if obj.d.Len(obj.v) != len(old) {
		t.Fatalf("member count %d, old %d", obj.d.Len(obj.v), len(old))
	}
	for k, v := range obj.d.Members(obj.v) {
		ov, ok := old[obj.d.Str(k)]
		if !ok || !bytes.Equal(ov, obj.d.Raw(v)) {
			t.Fatalf("member %q: %q, old %q", obj.d.Str(k), obj.d.Raw(v), ov)
		}
		if got := obj.get(obj.d.Str(k)); got != v {
			t.Fatalf("Get(%q) = %d, want %d", obj.d.Str(k), got, v)
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// frameSeeds are the helper's response shapes (results, error frames,
// progress frames) and adversarial inputs.
var frameSeeds = []string{
	`{"v":1,"id":1,"ok":true,"result":{"protocol":1,"helper_sha256":"` + strings.Repeat("a", 64) + `","flow_version":"1.32.0","flow_supported":true,"python_version":"3.12.3","pid":42,"operator":"op","capabilities":{"attended_service":true,"playwright":false,"tutorial":true,"authoring":false}}}`,
	`{"v":1,"id":2,"ok":true,"result":{"decision":{"decision_id":"` + strings.Repeat("0", 32) + `","action":"reject","status":"rejected","message":"Rejected \u00e9","report_success":null,"next_transition":null,"transition_receipt_digest":"sha256:` + strings.Repeat("b", 64) + `"}}}`,
	`{"v":1,"id":3,"ok":false,"error":{"kind":"refused","reason":"attention_not_found","flow_type":"openadapt_flow.X","mro":["A","B"],"dispatched":false}}`,
	`{"v":1,"id":4,"progress":{"phase":"lock","elapsed_ms":0}}`,
	`{"id":4,"progress":{"phase":"verify","elapsed_ms":1.5e3}}`,
	`{"v":1,"id":null,"ok":false,"error":{"kind":"invalid","reason":"bad_frame","flow_type":null,"mro":[],"dispatched":false}}`,
	`{"v":1,"id":5,"ok":true,"result":{"backend_kind":"web","headed":false}}`,
	` {"a":1} `, `{}`, `[]`, `null`, `"s"`, ``, `{`, `{"a"}`, `{"a":1,}`,
	`{"a":1,"a":2}`,                          // top-level duplicate: both refuse
	`{"r":{"a":1,"a":2}}`,                    // nested duplicate: old accepted
	`{"r":[{"k":"x","k":"y"}]}`,              // nested in an array
	`{"r":{"a":1,"\u0061":2}}`,               // duplicate after unescaping
	`{"a":"\ud800"}`, `{"a":"\udc00\ud800"}`, // lone surrogates
	`{"a":"\ud83d\ude00"}`,              // a pair
	"{\"a\":\"\xff\"}", "{\"a\xc3\":1}", // invalid UTF-8
	"\xef\xbb\xbf{}", // BOM
	`{"a":1}x`, `{"a":1}}`, `{"a":1}{"b":2}`, `{"a":1} 2`,
	`{"n":1e999}`, `{"n":-0}`, `{"n":01}`, `{"n":1.}`, `{"n":` + strings.Repeat("9", 4301) + `}`,
	`{"d":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"d":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}`,
	"{\"c\":\"\x01\"}", `{"e":"\x"}`, `{"e":"\u12"}`, `{"t":tru}`, `{"t":true }`,
}

func TestFrameParserDifferential(t *testing.T) {
	for _, s := range frameSeeds {
		checkFrameDifferential(t, []byte(s))
	}
}

func FuzzFrameParser(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFrameDifferential(t, b) })
}

// TestFrameRefusals: frames the helper never writes kill it, and the
// reason names the problem and a byte offset, never the frame's content.
func TestFrameRefusals(t *testing.T) {
	for _, tc := range []struct{ name, frame, want string }{
		{"nested duplicate", `{"v":1,"id":1,"ok":true,"result":{"backend_kind":"web","backend_kind":"PLANTED","headed":false}}`, "bad frame: duplicate key at byte 55"},
		{"top-level duplicate", `{"v":1,"id":1,"PLANTED":1,"PLANTED":2}`, "bad frame: duplicate key at byte 26"},
		{"lone surrogate", `{"v":1,"id":1,"ok":true,"result":{"PLANTED":"\udc80"}}`, "bad frame: lone surrogate escape at byte 45"},
		{"trailing data", `{"v":1,"id":1,"ok":true,"result":{}}PLANTED`, "bad frame: unexpected data after the top-level value at byte 36"},
		{"not an object", `["PLANTED"]`, "bad frame: not a JSON object"},
		{"invalid UTF-8", "{\"v\":1,\"id\":1,\"ok\":true,\"result\":{\"PLANTED\":\"\xff\"}}", "bad frame: invalid UTF-8 at byte 45"},
		{"result not an object", `{"v":1,"id":1,"ok":true,"result":["PLANTED"]}`, "result is not an object"},
		{"bad error object", `{"v":1,"id":1,"ok":false,"error":{"kind":"refused","reason":null,"flow_type":null,"mro":[1],"dispatched":false}}`, "bad error mro"},
		{"error mro with a null", `{"v":1,"id":1,"ok":false,"error":{"kind":"refused","reason":null,"flow_type":null,"mro":[null],"dispatched":false}}`, "bad error mro"},
		{"float id", `{"v":1,"id":1.0,"ok":true,"result":{}}`, "bad response id"},
		{"string id", `{"v":1,"id":"1","ok":true,"result":{}}`, "bad response id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Helper{pending: map[int64]*call{1: {op: "x", ch: make(chan reply, 1)}}}
			err := h.dispatchFrame([]byte(tc.frame))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "PLANTED") {
				t.Fatalf("error text carries frame content: %v", err)
			}
		})
	}
}

// TestDispatchParsesOnce: an accepted frame's result object is the frame's
// own parse, held over a copy of the reader's buffer.
func TestDispatchParsesOnce(t *testing.T) {
	c := &call{op: "x", ch: make(chan reply, 1)}
	h := &Helper{pending: map[int64]*call{7: c}}
	line := []byte(`{"v":1,"id":7,"ok":true,"result":{"backend_kind":"web","headed":true}}`)
	if err := h.dispatchFrame(line); err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x' // the reader reuses its buffer
	}
	r := <-c.ch
	k, ok1 := r.result.str("backend_kind")
	hd, ok2 := r.result.boolean("headed")
	if r.err != nil || !r.result.closed("backend_kind", "headed") || k != "web" || !hd || !ok1 || !ok2 {
		t.Fatalf("%+v %q %v", r, k, hd)
	}
}

func TestDecodeResults(t *testing.T) {
	parse := func(s string) object {
		t.Helper()
		o, err := parseObject([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	hello := `{"protocol":1,"helper_sha256":"h","flow_version":"1.32.0","flow_supported":true,"python_version":"3.12.3","pid":42,"operator":"op","capabilities":{"attended_service":true,"playwright":false,"tutorial":true,"authoring":false}}`
	hl, err := decodeHello(parse(hello))
	want := Hello{Protocol: 1, HelperSHA256: "h", FlowVersion: "1.32.0", FlowSupported: true, PythonVersion: "3.12.3", PID: 42, Operator: "op",
		Capabilities: Capabilities{AttendedService: true, Tutorial: true}}
	if err != nil || hl != want {
		t.Fatalf("%+v %v", hl, err)
	}
	for _, bad := range []string{
		strings.Replace(hello, `"pid":42`, `"pid":42.0`, 1),
		strings.Replace(hello, `"pid":42`, `"pid":"42"`, 1),
		strings.Replace(hello, `"operator":"op"`, `"operator":null`, 1),
		strings.Replace(hello, `"flow_supported":true`, `"flow_supported":1`, 1),
		strings.Replace(hello, `"authoring":false`, `"authoring":null`, 1),
		strings.Replace(hello, `"authoring":false`, `"authoring":false,"x":1`, 1),
		strings.Replace(hello, `"operator":"op"`, `"Operator":"op"`, 1), // encoding/json matched keys case-insensitively
	} {
		if _, err := decodeHello(parse(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	known := map[string]bool{"lock": true}
	for s, ok := range map[string]bool{
		`{"phase":"lock","elapsed_ms":12}`:      true,
		`{"phase":"lock","elapsed_ms":1.2e1}`:   true,
		`{"phase":"lock","elapsed_ms":1.5}`:     false,
		`{"phase":"lock","elapsed_ms":-1}`:      false,
		`{"phase":"lock","elapsed_ms":1e999}`:   false,
		`{"phase":"lock","elapsed_ms":2e12}`:    false,
		`{"phase":"lock","elapsed_ms":"1"}`:     false,
		`{"phase":"other","elapsed_ms":1}`:      false,
		`{"phase":"lock"}`:                      false,
		`{"phase":"lock","elapsed_ms":1,"x":1}`: false,
	} {
		if _, _, err := progressFrame(parse(s), known); (err == nil) != ok {
			t.Errorf("%s: %v", s, err)
		}
	}
}
