package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldFastMessage is the fast frame path the transport had before it moved
// onto pyjson: over the members json.Unmarshal produced, a hand-written
// scan of the line for non-ASCII bytes and nesting depth. Kept here only as
// the differential's oracle and the benchmark's baseline.
func oldFastMessage(line []byte, m map[string]json.RawMessage, method string) *jsonrpc.Request {
	rawMethod, ok := m["method"]
	if !ok || !plainString(rawMethod) {
		return nil
	}
	depth, inString, escaped := 0, false, false
	for _, b := range line {
		if b >= 0x80 {
			return nil
		}
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > sdkMaxDepth {
				return nil
			}
		case '}', ']':
			depth--
		}
	}
	req := &jsonrpc.Request{Method: method}
	if p, ok := m["params"]; ok {
		if len(p) == 0 || p[0] != '{' {
			return nil
		}
		req.Params = p
	}
	if rawID, ok := m["id"]; ok && string(rawID) != "null" {
		if req.ID, ok = plainID(rawID); !ok {
			return nil
		}
	}
	return req
}

// checkFastDifferential compares fastMessage with the scan it replaced:
// where both decode a frame they decode the same request; the new path
// takes non-ASCII frames the old one left to the SDK (pyjson has checked
// their UTF-8), and leaves to the SDK frames encoding/json reads its own
// way (a repeated key, a lone surrogate escape) or with a member beyond
// jsonrpc, method, id and params.
func checkFastDifferential(t *testing.T, frame []byte) {
	t.Helper()
	var d pyjson.Doc
	got := fastMessage(&d, frame)
	var old *jsonrpc.Request
	var m map[string]json.RawMessage
	if json.Unmarshal(frame, &m) == nil {
		if method, ok := jsonRPCShape(m); ok {
			old = oldFastMessage(frame, m, method)
		}
	}
	switch {
	case got != nil && old != nil:
		if got.ID != old.ID || got.Method != old.Method || !bytes.Equal(got.Params, old.Params) {
			t.Fatalf("%q: new %#v %q %s, old %#v %q %s", frame, got.ID.Raw(), got.Method, got.Params, old.ID.Raw(), old.Method, old.Params)
		}
	case got != nil:
		if ascii(frame) {
			t.Fatalf("fast path took an ASCII frame the old scan left to the SDK: %q", frame)
		}
	case old != nil:
		_, err := pyjson.Parse(frame, fastOptions)
		var se *pyjson.SyntaxError
		if errors.As(err, &se) && (se.Msg == "duplicate key" || se.Msg == "lone surrogate escape") {
			return
		}
		for k := range m {
			if k != "jsonrpc" && k != "method" && k != "id" && k != "params" {
				return
			}
		}
		t.Fatalf("fast path left to the SDK a frame the old scan took (%v): %q", err, frame)
	}
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// BenchmarkFrameParse is the frame parse of the read path for the
// get_workflow call of serve's BenchmarkServeReadRoundTrip, side by side: the old
// encoding/json members plus hand-written scan, and the one pyjson parse
// into a reused Doc.
func BenchmarkFrameParse(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"get_workflow","arguments":{"workflow":"workflow_0123456789abcdef"}}}`)
	b.Run("old", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]json.RawMessage
			if json.Unmarshal(frame, &m) != nil {
				b.Fatal("unmarshal")
			}
			method, ok := jsonRPCShape(m)
			if !ok || oldFastMessage(frame, m, method) == nil {
				b.Fatal("not fast")
			}
		}
	})
	b.Run("pyjson", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		var d pyjson.Doc
		for b.Loop() {
			if fastMessage(&d, frame) == nil {
				b.Fatal("not fast")
			}
		}
	})
}

// TestFastMessageMatchesSDK: every frame the one-parse path decodes is
// decoded to the same request by the go-sdk's jsonrpc.DecodeMessage, and
// frames outside its plain shape are left to DecodeMessage. One Doc serves
// every frame, as on the read loop.
func TestFastMessageMatchesSDK(t *testing.T) {
	fast := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{"name":"get_workflow","arguments":{"workflow":"workflow_0123"}}}`,
		`{"jsonrpc":"2.0","id":"abc-1","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":{"a":[[[]]]}}`,
		` { "params" : { "a" : 1 } , "method" : "m" , "id" : 0 , "jsonrpc" : "2.0" } `,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"a\"b\\c\u00e9"}}}`,
		// Valid UTF-8 is strict-checked by pyjson: no repair question.
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":"é"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}`,
	}
	slow := []string{
		`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
		`{"jsonrpc":"2.0","id":-1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1234567890123456,"method":"m"}`,
		`{"jsonrpc":"2.0","id":"a\u0062","method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"t\u006fols/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}}`,
		// What encoding/json reads its own way goes to the SDK's decoder.
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":1,"k":2}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud800"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"\xff\"}}",
		`{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`,
	}
	var d pyjson.Doc
	for _, f := range append(fast, slow...) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(f), &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, ok := jsonRPCShape(m); !ok {
			t.Fatalf("%s: not JSON-RPC shaped", f)
		}
		got := fastMessage(&d, []byte(f))
		if (got != nil) != slices.Contains(fast, f) {
			t.Fatalf("%.80s: fast path %v", f, got != nil)
		}
		if got != nil {
			sameAsSDK(t, []byte(f), got)
		}
		checkFastDifferential(t, []byte(f))
	}
	// The request does not share the reader's buffer.
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`)
	got := fastMessage(&d, line)
	copy(line, strings.Repeat("x", len(line)))
	if got == nil || string(got.Params) != `{"a":1}` || got.Method != "m" {
		t.Fatalf("%+v", got)
	}
}

func sameAsSDK(t testing.TB, frame []byte, got *jsonrpc.Request) {
	t.Helper()
	want, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		t.Fatalf("%s: fast path decoded a frame the SDK refuses: %v", frame, err)
	}
	w, ok := want.(*jsonrpc.Request)
	if !ok {
		t.Fatalf("%s: the SDK decodes a %T", frame, want)
	}
	if w.ID != got.ID || w.Method != got.Method || !bytes.Equal(w.Params, got.Params) {
		t.Fatalf("%s: fast %#v / %#v / %s, SDK %#v / %#v / %s", frame, got.ID.Raw(), got.Method, got.Params, w.ID.Raw(), w.Method, w.Params)
	}
}

// FuzzFastMessage: whatever the one-parse path decodes, encoding/json
// accepts as a JSON-RPC frame and the SDK decodes the same; and it agrees
// with the hand-written scan it replaced.
func FuzzFastMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"a":"\u00e9"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud800","t":"é"}}`))
	var d pyjson.Doc
	f.Fuzz(func(t *testing.T, frame []byte) {
		if got := fastMessage(&d, frame); got != nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(frame, &m); err != nil {
				t.Fatalf("fast path took a frame encoding/json refuses: %v", err)
			}
			if _, ok := jsonRPCShape(m); !ok {
				t.Fatal("fast path took a frame that is not JSON-RPC shaped")
			}
			sameAsSDK(t, frame, got)
		}
		checkFastDifferential(t, frame)
	})
}
