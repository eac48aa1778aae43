package stdio

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldFastMessage is the fast frame path the transport had before it moved
// onto pyjson: over the members json.Unmarshal produced, a hand-written
// scan of the line for non-ASCII bytes and nesting depth (the id, which
// the transport now maps itself, left out). Kept here only as the
// benchmark's baseline.
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
	return req
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
			var method string
			if json.Unmarshal(m["method"], &method) != nil || oldFastMessage(frame, m, method) == nil {
				b.Fatal("not fast")
			}
		}
	})
	b.Run("pyjson", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		var d pyjson.Doc
		for b.Loop() {
			if d.Parse(frame, fastOptions) != nil || plainRequest(&d, d.Root()) == nil {
				b.Fatal("not fast")
			}
		}
	})
}

// TestPlainRequestMatchesSDK: every frame the one-parse path builds is
// decoded to the same method and params by the go-sdk's
// jsonrpc.DecodeMessage, and frames outside its plain shape are left to
// DecodeMessage. One Doc serves every frame, as on the read loop.
func TestPlainRequestMatchesSDK(t *testing.T) {
	fast := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{"name":"get_workflow","arguments":{"workflow":"workflow_0123"}}}`,
		`{"jsonrpc":"2.0","id":"abc-1","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":null,"method":"x","params":{"a":[[[]]]}}`,
		` { "params" : { "a" : 1 } , "method" : "m" , "id" : 0 , "jsonrpc" : "2.0" } `,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"s":"a\"b\\c\u00e9"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"k":"é"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat("[", 998) + strings.Repeat("]", 998) + `}}`,
		// Ids are the transport's to map: any form is plain here.
		`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
		`{"jsonrpc":"2.0","id":-1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1234567890123456789012,"method":"m"}`,
		`{"jsonrpc":"2.0","id":"a\u0062","method":"m"}`,
	}
	slow := []string{
		`{"jsonrpc":"2.0","id":1,"method":"t\u006fols/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","extra":1}`,
	}
	var d pyjson.Doc
	for _, f := range append(fast, slow...) {
		if err := d.Parse([]byte(f), fastOptions); err != nil {
			t.Fatalf("%.80s: %v", f, err)
		}
		if !jsonRPCShape(&d, d.Root()) {
			t.Fatalf("%.80s: not JSON-RPC shaped", f)
		}
		got := plainRequest(&d, d.Root())
		if (got != nil) != slices.Contains(fast, f) {
			t.Fatalf("%.80s: plain %v", f, got != nil)
		}
		if got != nil {
			sameAsSDK(t, []byte(f), got)
		}
	}
	// The request does not share the reader's buffer.
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`)
	d.Parse(line, fastOptions)
	got := plainRequest(&d, d.Root())
	copy(line, strings.Repeat("x", len(line)))
	if got == nil || string(got.Params) != `{"a":1}` || got.Method != "m" {
		t.Fatalf("%+v", got)
	}
}

func sameAsSDK(t testing.TB, frame []byte, got *jsonrpc.Request) {
	t.Helper()
	want, err := jsonrpc.DecodeMessage(frame)
	if err != nil {
		t.Fatalf("%s: the plain path built a frame the SDK refuses: %v", frame, err)
	}
	w, ok := want.(*jsonrpc.Request)
	if !ok {
		t.Fatalf("%s: the SDK decodes a %T", frame, want)
	}
	if w.Method != got.Method || !bytes.Equal(w.Params, got.Params) {
		t.Fatalf("%s: plain %q / %s, SDK %q / %s", frame, got.Method, got.Params, w.Method, w.Params)
	}
}

// TestLenientFrame: a line the strict parser refuses for its encoding is
// read as encoding/json reads it, and a key repeated after that reading is
// still refused.
func TestLenientFrame(t *testing.T) {
	for in, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud800","n":12345678901234567890}}`: `{"id":1,"jsonrpc":"2.0","method":"m","params":{"n":12345678901234567890,"s":"` + "\uFFFD" + `"}}`,
		"{\"a\":\"\xff<\"}":           "{\"a\":\"\ufffd<\"}",
		`{"a":1,"a":2}`:               "parse error",
		"{\"\xff\":1,\"\xfe\":2}":     "parse error", // both keys read as U+FFFD
		`{"a":"\ud800","a":"\udc00"}`: "parse error",
		`{} {}`:                       "parse error",
		`{"a":`:                       "parse error",
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001): "nested too deep",
	} {
		got, err := lenientFrame([]byte(in))
		if err != nil {
			if err.Error() != want {
				t.Errorf("lenientFrame(%.40q) = %v, want %s", in, err, want)
			}
			continue
		}
		if string(got) != want || !pyjson.Valid(got, fastOptions) {
			t.Errorf("lenientFrame(%.40q) = %s, want %s", in, got, want)
		}
	}
}

// FuzzPlainRequest: whatever the one-parse path builds, the SDK decodes to
// the same method and params; and whatever lenientFrame returns is strict
// JSON that encoding/json reads as it read the line.
func FuzzPlainRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"m","params":{"a":"\u00e9"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"n"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"\ud800","t":"é"}}`))
	var d pyjson.Doc
	f.Fuzz(func(t *testing.T, frame []byte) {
		if d.Parse(frame, fastOptions) == nil && jsonRPCShape(&d, d.Root()) {
			if got := plainRequest(&d, d.Root()); got != nil {
				sameAsSDK(t, frame, got)
			}
		}
		if norm, err := lenientFrame(frame); err == nil {
			if !pyjson.Valid(norm, fastOptions) {
				t.Fatalf("lenientFrame(%q) = %q: not strict JSON", frame, norm)
			}
			var a, b any
			if json.Unmarshal(frame, &a) != nil || json.Unmarshal(norm, &b) != nil {
				t.Fatalf("lenientFrame(%q) = %q: encoding/json refuses one of them", frame, norm)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if !bytes.Equal(ja, jb) {
				t.Fatalf("lenientFrame(%q) = %q, read differently", frame, norm)
			}
		}
	})
}
