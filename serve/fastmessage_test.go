package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldFastMessage is the fast frame path transport.go had before issue 12
// moved it onto pyjson: over the members json.Unmarshal produced, a
// hand-written scan of the line for non-ASCII bytes and nesting depth. Kept
// here only as the differential's oracle and the benchmark's baseline.
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
// get_workflow call of BenchmarkServeReadRoundTrip, side by side: the old
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
