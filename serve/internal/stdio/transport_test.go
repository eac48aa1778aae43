package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a goroutine-safe output sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) lines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(s.b.String(), "\n"), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

const initReq = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
const initializedNote = `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`

// runTransport serves a tiny go-sdk server with a "slow" tool over the
// framed transport, feeding input, and returns the output lines and Read's
// final error.
func runTransport(t *testing.T, input io.Reader) ([]string, bool) {
	t.Helper()
	// "slow" answers only once the input has ended, so its reply is
	// always pending at EOF (no sleep decides that).
	inputEnded := make(chan struct{})
	var endOnce sync.Once
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-inputEnded:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	out := &syncBuffer{}
	tr := &Transport{In: input, Out: out, OnInputEnd: func() { endOnce.Do(func() { close(inputEnded) }) }}
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("session did not end")
	}
	for _, l := range out.lines() {
		if len(l) > MaxFrameBytes {
			t.Fatalf("outbound frame of %d bytes", len(l))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("stdout line is not one JSON-RPC message: %q", l)
		}
	}
	return out.lines(), tr.Oversized()
}

func findReply(t *testing.T, lines []string, id string) map[string]any {
	t.Helper()
	for _, l := range lines {
		var m map[string]json.RawMessage
		json.Unmarshal([]byte(l), &m)
		if _, isReq := m["method"]; isReq {
			continue
		}
		if string(m["id"]) == id {
			var v map[string]any
			json.Unmarshal([]byte(l), &v)
			return v
		}
	}
	t.Fatalf("no reply with id %s in %q", id, lines)
	return nil
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestTransportOversizeIDFirst(t *testing.T) {
	t.Parallel()
	big := `{"jsonrpc":"2.0","id":"big-7","method":"tools/call","params":{"name":"slow","arguments":{"x":"` + strings.Repeat("a", 5<<20) + `"}}}`
	in := strings.NewReader(initReq + "\n" + initializedNote + "\n" + big + "\n" + `{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	lines, oversized := runTransport(t, in)
	if !oversized {
		t.Fatal("oversized not reported")
	}
	findReply(t, lines, "1") // the initialize reply is not lost
	r := findReply(t, lines, `"big-7"`)
	if errCode(r) != -32600 || r["error"].(map[string]any)["message"] != "Request exceeds the 4 MiB frame limit." {
		t.Fatalf("reply = %v", r)
	}
	for _, l := range lines {
		if strings.Contains(l, `"id":9`) {
			t.Fatal("a request after the oversized frame was answered")
		}
	}
}

func TestTransportOversizeIDAfter(t *testing.T) {
	t.Parallel()
	big := `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"slow","arguments":{"x":"` + strings.Repeat("a", 5<<20) + `"}},"id":3}`
	lines, _ := runTransport(t, strings.NewReader(initReq+"\n"+big+"\n"))
	findReply(t, lines, "1")
	r := findReply(t, lines, "null")
	if errCode(r) != -32600 {
		t.Fatalf("reply = %v", r)
	}
}

func TestTransportMalformedAndInvalid(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		initReq,
		initializedNote,
		`{"jsonrpc":"2.0","id":5,"method":"ping"`, // truncated: id recoverable
		`not json at all`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"} {"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{}`,
		`42`,
		`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":10,"method":"ping"}`,
	}, "\n") + "\n"
	lines, oversized := runTransport(t, strings.NewReader(in))
	if oversized {
		t.Fatal("not oversized")
	}
	if r := findReply(t, lines, "5"); errCode(r) != -32700 {
		t.Fatalf("truncated: %v", r)
	}
	if r := findReply(t, lines, "6"); errCode(r) != -32700 {
		t.Fatalf("two values: %v", r)
	}
	nulls := 0
	parse, invalid := 0, 0
	for _, l := range lines {
		var m map[string]any
		json.Unmarshal([]byte(l), &m)
		if m["id"] == nil && m["error"] != nil {
			nulls++
			switch errCode(m) {
			case -32700:
				parse++
			case -32600:
				invalid++
			}
		}
	}
	if parse != 1 || invalid != 3 {
		t.Fatalf("null-id replies: parse %d invalid %d in %q", parse, invalid, lines)
	}
	// The session continued: the last ping is answered.
	if r := findReply(t, lines, "10"); r["result"] == nil {
		t.Fatalf("ping after bad lines: %v", r)
	}
}

// TestTransportWithholdsEOF: a client that writes requests, including a
// slow call, then closes stdin receives every reply (the go-sdk's own
// stdio transport loses them: modelcontextprotocol/go-sdk#1061).
func TestTransportWithholdsEOF(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		initReq,
		initializedNote,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
	}, "\n") + "\n"
	lines, _ := runTransport(t, strings.NewReader(in))
	for _, id := range []string{"1", "2", "3", "4"} {
		if r := findReply(t, lines, id); r["result"] == nil {
			t.Fatalf("reply %s = %v", id, r)
		}
	}
}

// canary is a planted caller string that must never be echoed.
const canary = "Jane Roe MRN-9911 sk_live_secret /private/protected/path"

func TestTransportUnknownMethodNotEchoed(t *testing.T) {
	t.Parallel()
	in := initReq + "\n" + initializedNote + "\n" + `{"jsonrpc":"2.0","id":2,"method":"` + canary + `"}` + "\n"
	lines, _ := runTransport(t, strings.NewReader(in))
	r := findReply(t, lines, "2")
	if errCode(r) != -32601 {
		t.Fatalf("reply = %v", r)
	}
	for _, l := range lines {
		for _, tok := range []string{canary, "Jane Roe", "MRN-9911", "sk_live_secret", "/private/protected/path"} {
			if strings.Contains(l, tok) {
				t.Fatalf("stdout leaks %q: %.300s", tok, l)
			}
		}
	}
}

// endlessReader yields n bytes of 'a' and then EOF, with no newline.
type endlessReader struct{ n int }

func (r *endlessReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n)
	for i := range p[:k] {
		p[i] = 'a'
	}
	r.n -= k
	return k, nil
}

// TestFrameReaderBoundedMemory stays sequential: TotalAlloc counts every
// goroutine's allocations, so a parallel test would inflate it.
func TestFrameReaderBoundedMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fr := newFrameReader(&endlessReader{n: 50 << 20})
	line, oversize, err := fr.next()
	runtime.ReadMemStats(&after)
	if !oversize || len(line) != idScanPrefix || err != nil {
		t.Fatalf("oversize=%v len=%d err=%v", oversize, len(line), err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 24<<20 {
		t.Fatalf("allocated %d bytes for a 50 MiB line", grew)
	}
	if _, _, err := fr.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after oversize: %v", err)
	}
}

func TestFrameReaderCRLFAndExactBound(t *testing.T) {
	t.Parallel()
	exact := strings.Repeat("b", MaxFrameBytes)
	fr := newFrameReader(bufio.NewReader(strings.NewReader("x\r\n" + exact + "\r\n" + exact + "b\n")))
	l, over, _ := fr.next()
	if string(l) != "x" || over {
		t.Fatalf("crlf: %q %v", l, over)
	}
	l, over, _ = fr.next()
	if len(l) != MaxFrameBytes || over {
		t.Fatalf("exact bound: %d %v", len(l), over)
	}
	_, over, _ = fr.next()
	if !over {
		t.Fatal("bound+1 not oversize")
	}
}

func TestRecoverID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"id":7,"x":1}`:                                     `7`,
		`{"params":{"id":1},"id":"a"}`:                       `"a"`,
		`{"params":[{"id":1}],"id":-2.5}`:                    ``, // not an integer: null
		`{"id":1e3}`:                                         ``,
		`{"id":"a\u0062<"}`:                                  `"a\u0062<"`, // verbatim
		`{"id":18446744073709551617,"x":`:                    `18446744073709551617`,
		`{"id":1,"id":2}`:                                    ``, // which one? null
		`{"id":"\ud800"}`:                                    ``, // not a string JSON allows
		`{"id":[1],"params":{"id":2}}`:                       ``,
		`{"params":{"id":1}}`:                                ``,
		`{"id":{"x":1}}`:                                     ``,
		`[{"id":1}]`:                                         ``,
		`{"method":"x","id":12,"params":{"a`:                 `12`,
		`{"a":"` + strings.Repeat("z", 70<<10) + `","id":5}`: ``,
	} {
		if got := string(recoverID([]byte(in))); got != want {
			t.Errorf("recoverID(%.40q) = %q, want %q", in, got, want)
		}
	}
}

// TestRewrite: a handler's Rewrite replaces the reply of a listed method's
// request this transport read, and nothing else: not a method that is not
// listed, not another transport's request, not an error reply. Every slot
// is gone once its reply is written.
func TestRewrite(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	tr := &Transport{In: inR, Out: out, Rewritable: []string{"tools/list"}}
	other := &Transport{Rewritable: []string{"tools/list"}}
	got := make(chan string, 8)
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	srv.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "initialize" || method == "notifications/initialized" {
				return res, err
			}
			replace := func(result []byte) [][]byte {
				return [][]byte{[]byte(`{"rewritten":`), result, []byte(`}`)}
			}
			if other.Rewrite(req, replace) {
				got <- method + ": rewritten by another transport"
			}
			got <- fmt.Sprintf("%s: %v", method, tr.Rewrite(req, replace))
			return res, err
		}
	})
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{
		initReq, initializedNote,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"not a cursor"}}`,
	} {
		io.WriteString(inW, l+"\n")
	}
	inW.Close()
	ss.Wait()
	close(got)
	var calls []string
	for c := range got {
		calls = append(calls, c)
	}
	slices.Sort(calls)
	if want := []string{"ping: false", "tools/list: true", "tools/list: true"}; !slices.Equal(calls, want) {
		t.Fatalf("Rewrite calls %q, want %q", calls, want)
	}
	lines := out.lines()
	if r := findReply(t, lines, "2"); r["result"].(map[string]any)["rewritten"] == nil {
		t.Fatalf("tools/list reply not rewritten: %v", r)
	}
	if r := findReply(t, lines, "3"); r["result"].(map[string]any)["rewritten"] != nil {
		t.Fatalf("ping reply rewritten: %v", r)
	}
	if r := findReply(t, lines, "4"); r["error"] == nil {
		t.Fatalf("bad cursor: %v", r)
	}
	c := tr.current()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if len(c.slotsByID) != 0 || len(c.slotsByExtra) != 0 {
		t.Fatalf("slots left: %d %d", len(c.slotsByID), len(c.slotsByExtra))
	}
}
