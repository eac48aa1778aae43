package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// rawSession drives a server over the framed transport with raw frames.
type rawSession struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan struct{}
	id   int
}

// rawConnect connects s.mcp over tr (whose in/out it sets to pipes) and
// completes initialize.
func rawConnect(t *testing.T, s *Server, tr *framedTransport) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr.in, tr.out = inR, outW
	ss, err := s.mcp.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawSession{t: t, in: inW, out: bufio.NewReaderSize(outR, 8<<20), done: make(chan struct{})}
	go func() { ss.Wait(); outW.Close(); close(r.done) }()
	t.Cleanup(func() { inW.Close(); <-r.done })
	r.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawSession) send(frame string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, frame+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// call sends a request and returns its reply line (the server sends no
// notifications in these sessions).
func (r *rawSession) call(method, params string) string {
	r.t.Helper()
	r.id++
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, r.id, method, params))
	line, err := r.out.ReadString('\n')
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSuffix(line, "\n")
}

// listAll pages through tools/list, listing the first page twice (the
// second time from the cache), and returns every reply line.
func (r *rawSession) listAll() []string {
	r.t.Helper()
	var lines []string
	cursor := ""
	for page := 0; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		line := r.call("tools/list", params)
		lines = append(lines, line)
		if page == 0 {
			lines = append(lines, r.call("tools/list", params))
		}
		var msg struct {
			Result struct {
				NextCursor string `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			r.t.Fatalf("tools/list reply: %v: %.200s", err, line)
		}
		if cursor = msg.Result.NextCursor; cursor == "" {
			return lines
		}
		if page > 50 {
			r.t.Fatal("tools/list does not end")
		}
	}
}

// TestToolsListPreEncoded: Serve's transport writes tools/list pages from
// bytes encoded once per page (issue 12), and those replies are byte for
// byte the ones the go-sdk writes when it encodes the page itself (a
// transport without the page cache), for every page of a paged list, in
// both protocol eras. No sentinel ever reaches the wire.
func TestToolsListPreEncoded(t *testing.T) {
	testOnlyMaxListBytes = 1 // pages of 5 tools
	defer func() { testOnlyMaxListBytes = 0 }()
	e := newEnv(t)
	for i := range 7 {
		e.demo(fmt.Sprintf("demo%d", i), testBundle{salt: fmt.Sprintf("pre%d", i)})
	}
	o := e.opts()
	o.AllowRun = true
	s, err := New(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cached := rawConnect(t, s, &framedTransport{sessionID: s.pages.sessionID(), expand: s.pages.expand}).listAll()
	plain := rawConnect(t, s, &framedTransport{}).listAll()
	if len(cached) < 4 {
		t.Fatalf("want at least 3 pages, got %d replies", len(cached))
	}
	if len(s.pages.arrays) != len(cached)-1 {
		t.Fatalf("%d pages encoded for %d distinct pages", len(s.pages.arrays), len(cached)-1)
	}
	if len(cached) != len(plain) {
		t.Fatalf("%d replies with the cache, %d without", len(cached), len(plain))
	}
	for i := range cached {
		if cached[i] != plain[i] {
			t.Fatalf("reply %d differs:\ncached %.300s\nsdk    %.300s", i, cached[i], plain[i])
		}
		if strings.Contains(cached[i], `\u0000`) || strings.Contains(cached[i], s.pages.nonce) {
			t.Fatalf("reply %d carries the sentinel: %.300s", i, cached[i])
		}
		if !strings.Contains(cached[i], `"inputSchema":{"type":"object"`) {
			t.Fatalf("reply %d has no raw schema: %.300s", i, cached[i])
		}
	}
	// A 2026-07-28 request (per-request _meta) gets the server identity in
	// the result's _meta; the page is still the cached one, spliced after it.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	a := rawConnect(t, s, &framedTransport{sessionID: s.pages.sessionID(), expand: s.pages.expand}).call("tools/list", "{"+meta+"}")
	b := rawConnect(t, s, &framedTransport{}).call("tools/list", "{"+meta+"}")
	if a != b {
		t.Fatalf("2026-07-28 reply differs:\ncached %.300s\nsdk    %.300s", a, b)
	}
	if strings.Contains(a, `\u0000`) {
		t.Fatalf("2026-07-28 reply carries the sentinel: %.300s", a)
	}
}

// TestExpandLeavesOtherResults: only a result ending in this server's
// sentinel is rewritten; a tool result that merely looks like one, another
// server's sentinel, or an index out of range are written as they are.
func TestExpandLeavesOtherResults(t *testing.T) {
	var p toolPages
	p.init()
	p.arrays = [][]byte{[]byte(`[{"name":"x"}]`)}
	own := func(i string) []byte {
		return []byte(`{"tools":[{"inputSchema":null,"name":"\u0000` + p.nonce + `-` + i + `"}]}`)
	}
	if got := string(bytes.Join(p.expand(own("0")), nil)); got != `{"tools":[{"name":"x"}]}` {
		t.Fatalf("own sentinel: %s", got)
	}
	var other toolPages
	other.init()
	for _, in := range [][]byte{
		own("1"), own("01"), own("-0"), own("x"),
		[]byte(`{"tools":[{"inputSchema":null,"name":"\u0000` + other.nonce + `-0"}]}`),
		[]byte(`{"content":[],"structuredContent":{"name":"x"}}`),
		[]byte(`{"tools":[]}`),
	} {
		if got := p.expand(in); len(got) != 1 || !bytes.Equal(got[0], in) {
			t.Fatalf("%s rewritten to %s", in, got)
		}
	}
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

// TestInvalidResultNeverSent: a result that does not validate against its
// tool's output schema is replaced by internal_error, also after a valid
// result of the same tool was cached, and a cached result is answered with
// the same bytes as the first time (issue 12: validated once per result).
func TestInvalidResultNeverSent(t *testing.T) {
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "inv"})
	s, err := New(e.opts(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, resolved := s.schemaFor(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	entry := &toolEntry{name: "probe", output: resolved}
	var body any
	h := s.toolMiddleware(entry, func(context.Context, *toolCall) (any, *failure) { return body, nil })
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "probe"}}
	call := func(b any) *mcp.CallToolResult {
		body = b
		res, err := h(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	isInternal := func(res *mcp.CallToolResult) bool {
		return res.IsError && strings.Contains(string(res.StructuredContent.(json.RawMessage)), `"code":"internal_error"`)
	}
	for round := range 2 {
		if res := call(map[string]any{"n": "x"}); !isInternal(res) {
			t.Fatalf("round %d: invalid result sent: %s", round, res.StructuredContent)
		}
		if res := call(map[string]any{"n": 1, "extra": true}); !isInternal(res) {
			t.Fatalf("round %d: invalid result sent: %s", round, res.StructuredContent)
		}
		first := call(map[string]any{"n": 1})
		second := call(map[string]any{"n": 1})
		if first.IsError || second.IsError {
			t.Fatalf("round %d: valid result refused", round)
		}
		if string(first.StructuredContent.(json.RawMessage)) != `{"n":1}` ||
			first.Content[0].(*mcp.TextContent).Text != "{\n  \"n\": 1\n}" ||
			second.Content[0].(*mcp.TextContent).Text != first.Content[0].(*mcp.TextContent).Text {
			t.Fatalf("round %d: cached result differs: %s / %s", round, first.StructuredContent, second.StructuredContent)
		}
	}
	if _, ok := s.results.lookup(resolved.get(), []byte(`{"n":"x"}`)); ok {
		t.Fatal("an invalid result was cached")
	}
}

// TestIndentJSONMatchesEncoder: the indented copy made from the compact
// bytes is what an indenting encoding/json Encoder writes for the value.
func TestIndentJSONMatchesEncoder(t *testing.T) {
	for _, v := range []any{
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": "<&>\u2028é\n", "d": []any{1, 2.5, nil, true}},
		[]any{},
		"x",
		failure{Error: failureBody{Code: "c", Message: "m <b>", Recovery: "r"}},
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		compact, err := encodeJSON(v, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := indentJSON(compact), strings.TrimSuffix(b.String(), "\n"); got != want {
			t.Fatalf("indent %q, encoder %q", got, want)
		}
	}
}

// TestEveryToolSchemaResolves: every registered tool's input and output
// schema resolves (they are resolved on first use, so a bad one would
// otherwise surface only at its first call), in every tool mode.
func TestEveryToolSchemaResolves(t *testing.T) {
	for _, mutate := range []func(*Options){
		func(o *Options) {},
		func(o *Options) { o.AllowRun = true },
		func(o *Options) { o.AllowRun, o.ToolMode = true, "catalog" },
		func(o *Options) {
			o.AllowRun, o.AllowProtectedExport, o.AllowURLOverride, o.AllowSyntheticRecordedDefaults = true, true, true, true
		},
	} {
		e := newEnv(t)
		e.demo("demo", testBundle{salt: "resolve"})
		o := e.opts()
		mutate(&o)
		s, err := New(o, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for _, te := range s.list {
			if te.output.get() == nil || (te.input == nil) != te.run || (te.input != nil && te.input.get() == nil) {
				t.Fatalf("%s: schemas not resolved", te.name)
			}
		}
		s.Close()
	}
}
