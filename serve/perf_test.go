package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
)

// rawSession drives a server over the stdio transport with raw frames.
type rawSession struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	done chan struct{}
	id   int
}

// rawConnect connects s.mcp over a stdio transport on pipes and completes
// initialize. With asServe the transport is the server's own connection,
// as Serve makes it (tools/list pages pre-encoded); without, it is any
// other stdio session, whose pages the SDK encodes.
func rawConnect(t *testing.T, s *Server, asServe bool) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := &stdio.Transport{In: inR, Out: outW}
	if asServe {
		tr.Rewritable = []string{"tools/list"}
		s.conn.Store(tr)
	}
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
// bytes encoded once per page, and those replies are byte for byte the
// ones the go-sdk writes when it encodes the page itself (a session that
// is not Serve's), for every page of a paged list, in both protocol eras.
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
	cached := rawConnect(t, s, true).listAll()
	plain := rawConnect(t, s, false).listAll()
	if len(cached) < 4 {
		t.Fatalf("want at least 3 pages, got %d replies", len(cached))
	}
	if s.reg.pages.npages != len(cached)-1 {
		t.Fatalf("%d pages encoded for %d distinct pages", s.reg.pages.npages, len(cached)-1)
	}
	if len(cached) != len(plain) {
		t.Fatalf("%d replies with the cache, %d without", len(cached), len(plain))
	}
	for i := range cached {
		if cached[i] != plain[i] {
			t.Fatalf("reply %d differs:\ncached %.300s\nsdk    %.300s", i, cached[i], plain[i])
		}
		if !strings.Contains(cached[i], `"inputSchema":{"type":"object"`) {
			t.Fatalf("reply %d has no raw schema: %.300s", i, cached[i])
		}
	}
	// A 2026-07-28 request (per-request _meta) gets the server identity in
	// the result's _meta; the page is still the cached one, spliced after it.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	pages := s.reg.pages.npages
	a := rawConnect(t, s, true).call("tools/list", "{"+meta+"}")
	b := rawConnect(t, s, false).call("tools/list", "{"+meta+"}")
	if a != b {
		t.Fatalf("2026-07-28 reply differs:\ncached %.300s\nsdk    %.300s", a, b)
	}
	if s.reg.pages.npages != pages {
		t.Fatal("the 2026-07-28 page was encoded again")
	}
}

// TestSpliceTools: a result the SDK encoded with an empty tools array gets
// the page in its place; any other result is written as it is.
func TestSpliceTools(t *testing.T) {
	page := []byte(`[{"name":"x"}]`)
	for in, want := range map[string]string{
		`{"nextCursor":"c","tools":[]}`:          `{"nextCursor":"c","tools":[{"name":"x"}]}`,
		`{"_meta":{"a":1},"ttlMs":0,"tools":[]}`: `{"_meta":{"a":1},"ttlMs":0,"tools":[{"name":"x"}]}`,
		`{"tools":[{"name":"y"}]}`:               `{"tools":[{"name":"y"}]}`,
		`{"content":[],"isError":false}`:         `{"content":[],"isError":false}`,
	} {
		if got := string(bytes.Join(spliceTools([]byte(in), page), nil)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestInvalidResultNeverSent: a result that does not validate against its
// tool's output schema is replaced by internal_error, also after a valid
// result of the same tool was cached, and a cached result is answered with
// the same bytes as the first time (each result is validated once).
func TestInvalidResultNeverSent(t *testing.T) {
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "inv"})
	s, err := New(e.opts(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, resolved := s.reg.schemaFor(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`, false, "")
	entry := &toolEntry{name: "probe", output: resolved}
	var body any
	h := s.reg.toolMiddleware(entry, func(context.Context, *toolCall) (any, *failure) { return body, nil })
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
	if _, ok := s.reg.results.lookup(resolved.get(), []byte(`{"n":"x"}`)); ok {
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
		for _, te := range s.reg.list {
			if te.output.get() == nil || (te.input == nil) != te.run || (te.input != nil && te.input.get() == nil) {
				t.Fatalf("%s: schemas not resolved", te.name)
			}
		}
		s.Close()
	}
}
