package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idServer serves, over the framed transport, "slow" (answers "done" once
// the input has ended, or "canceled" when the client cancels it) and
// "progress" (sends one progress notification with the call's token, then
// answers). It feeds lines, closes the input, and returns the output
// lines once the session has ended. A line "wait <id>" is not sent: the
// feed waits there until the reply with that id token was written.
func idServer(t *testing.T, lines ...string) []string {
	t.Helper()
	inputEnded := make(chan struct{})
	var endOnce sync.Once
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-inputEnded:
			return text("done"), nil
		case <-ctx.Done():
			return text("canceled"), nil
		}
	})
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1})
		}
		return text("ok"), nil
	})
	out := &notifyingBuffer{written: make(chan struct{}, 1)}
	in, feed := io.Pipe()
	tr := &Transport{In: in, Out: out, OnInputEnd: func() { endOnce.Do(func() { close(inputEnded) }) }}
	ss, err := srv.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, l := range lines {
			if id, ok := strings.CutPrefix(l, "wait "); ok {
				out.waitFor(`"id":` + id + `,`)
				continue
			}
			io.WriteString(feed, l+"\n")
		}
		feed.Close()
	}()
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("session did not end")
	}
	return out.lines()
}

// notifyingBuffer is a syncBuffer that can wait for a text to be written.
type notifyingBuffer struct {
	syncBuffer
	written chan struct{}
}

func (n *notifyingBuffer) Write(p []byte) (int, error) {
	k, err := n.syncBuffer.Write(p)
	select {
	case n.written <- struct{}{}:
	default:
	}
	return k, err
}

func (n *notifyingBuffer) waitFor(s string) {
	for !strings.Contains(n.String(), s) {
		<-n.written
	}
}

// rawReply is one reply line: its id token exactly as written, its error
// code (0 for a result) and the text of a tool result.
type rawReply struct {
	id   string
	code int64
	text string
}

func replies(t *testing.T, lines []string) []rawReply {
	t.Helper()
	var out []rawReply
	for _, l := range lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Error  *struct {
				Code int64 `json:"code"`
			} `json:"error"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		if m.Method != nil {
			continue
		}
		r := rawReply{id: string(m.ID)}
		if m.Error != nil {
			r.code = m.Error.Code
		}
		if len(m.Result.Content) == 1 {
			r.text = m.Result.Content[0].Text
		}
		out = append(out, r)
	}
	return out
}

func replyFor(t *testing.T, rs []rawReply, id string) rawReply {
	t.Helper()
	var found []rawReply
	for _, r := range rs {
		if r.id == id {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d replies with id %s in %+v", len(found), id, rs)
	}
	return found[0]
}

func call(id, tool string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// TestTransportIDsEchoedVerbatim: every string or integer id is answered
// with the id token the client sent, byte for byte, whatever its size or
// escapes, and ids that a float64 or an int64 would merge stay apart
// while both are in flight.
func TestTransportIDsEchoedVerbatim(t *testing.T) {
	t.Parallel()
	ids := []string{
		`9223372036854775808`,  // beyond int64
		`-9223372036854775808`, // int64's minimum: what 2^63 wraps to
		`12345678901234567`,    // beyond float64's exact integers
		`12345678901234568`,    // the float64 neighbour of the one above
		`-0`,
		`0`,
		`100000000000000000000000000000000000000000`,
		`"a"`,
		`"\u0061"`, // the same string, spelled with an escape
		`"é\ud83d\ude00\n"`,
		`""`,
	}
	lines := []string{initReq, initializedNote}
	for _, id := range ids {
		lines = append(lines, call(id, "slow"))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}`)
	rs := replies(t, idServer(t, lines...))
	for _, id := range ids {
		if r := replyFor(t, rs, id); r.code != 0 || r.text != "done" {
			t.Errorf("id %s: %+v", id, r)
		}
	}
	if r := replyFor(t, rs, `18446744073709551617`); r.code != 0 {
		t.Errorf("ping: %+v", r)
	}
}

// TestTransportNonIntegerIDRefused: a number id with a fraction or an
// exponent is answered with an invalid-request error and a null id, and
// the request is never dispatched; the session goes on.
func TestTransportNonIntegerIDRefused(t *testing.T) {
	t.Parallel()
	bad := []string{`2.5`, `1e3`, `1.0`, `-0.0`, `2E0`}
	lines := []string{initReq, initializedNote}
	for _, id := range bad {
		lines = append(lines, call(id, "progress"))
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	rs := replies(t, idServer(t, lines...))
	nulls := 0
	for _, r := range rs {
		if r.id == "null" {
			nulls++
			if r.code != -32600 {
				t.Errorf("null-id reply %+v, want -32600", r)
			}
		}
		if r.text == "ok" {
			t.Errorf("a call with a non-integer id was dispatched: %+v", r)
		}
	}
	if nulls != len(bad) {
		t.Fatalf("%d null-id replies, want %d: %+v", nulls, len(bad), rs)
	}
	if r := replyFor(t, rs, "2"); r.code != 0 {
		t.Fatalf("ping after the bad ids: %+v", r)
	}
}

// TestTransportDuplicateKeys: a frame with a repeated key at any depth is a
// parse error, never read last-wins; its id is recovered when the "id"
// member itself is not the repeated one. The session goes on.
func TestTransportDuplicateKeys(t *testing.T) {
	t.Parallel()
	rs := replies(t, idServer(t,
		initReq, initializedNote,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","method":"ping"}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"progress","arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{"s":"\ud800","k":[{"x":1,"x":1}]}}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"progress\",\"arguments\":{\"\xff\":1,\"\xfe\":2}}}",
		`{"jsonrpc":"2.0","id":9,"id":10,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping"}`,
	))
	for _, id := range []string{"5", "6", "7", "8"} {
		if r := replyFor(t, rs, id); r.code != -32700 {
			t.Errorf("id %s: %+v, want a parse error", id, r)
		}
	}
	if r := replyFor(t, rs, "null"); r.code != -32700 {
		t.Errorf("repeated id: %+v", r)
	}
	for _, r := range rs {
		if r.text == "ok" || r.id == "9" || r.id == "10" {
			t.Errorf("a frame with a repeated key was dispatched: %+v", r)
		}
	}
	if r := replyFor(t, rs, "11"); r.code != 0 {
		t.Fatalf("ping after the bad frames: %+v", r)
	}
}

// TestTransportCancelMapsRawID: notifications/cancelled names a request by
// the id token the client sent, so it cancels exactly that request, never
// one whose id a lossy decoding would confuse with it.
func TestTransportCancelMapsRawID(t *testing.T) {
	t.Parallel()
	rs := replies(t, idServer(t,
		initReq, initializedNote,
		call(`9223372036854775808`, "slow"),
		call(`-9223372036854775808`, "slow"),
		call(`"x"`, "slow"),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9223372036854775808}}`,
		"wait 9223372036854775808",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"y"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.5}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, // initialize: answered long ago
	))
	// The SDK answers a canceled call with an error (or the tool's own
	// answer); either way that call, and only it, saw the cancellation.
	if r := replyFor(t, rs, `9223372036854775808`); r.text != "canceled" && r.code == 0 {
		t.Errorf("the canceled call: %+v", r)
	}
	for _, id := range []string{`-9223372036854775808`, `"x"`} {
		if r := replyFor(t, rs, id); r.text != "done" {
			t.Errorf("call %s: %+v, want it left alone", id, r)
		}
	}
}

// TestTransportDuplicateInFlightID: a request whose id token is that of a
// request still in flight is refused (invalid request, null id) and not
// dispatched; the first one is answered with its id.
func TestTransportDuplicateInFlightID(t *testing.T) {
	t.Parallel()
	rs := replies(t, idServer(t,
		initReq, initializedNote,
		call(`"dup"`, "slow"),
		call(`"dup"`, "progress"),
	))
	if r := replyFor(t, rs, `"dup"`); r.text != "done" {
		t.Errorf("first: %+v", r)
	}
	if r := replyFor(t, rs, "null"); r.code != -32600 {
		t.Errorf("second: %+v", r)
	}
}

// TestTransportProgressTokenVerbatim: a progress notification carries the
// progressToken exactly as the client sent it in the call's _meta.
func TestTransportProgressTokenVerbatim(t *testing.T) {
	t.Parallel()
	tokens := []string{`12345678901234567`, `9223372036854775808`, `"tok\u0041"`, `7`, `2.5`}
	lines := []string{initReq, initializedNote}
	for i, tok := range tokens {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/call","params":{"name":"progress","arguments":{},"_meta":{"progressToken":`+tok+`}}}`)
	}
	out := idServer(t, lines...)
	var got []string
	for _, l := range out {
		var n struct {
			Method string `json:"method"`
			Params struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"params"`
		}
		json.Unmarshal([]byte(l), &n)
		if n.Method == "notifications/progress" {
			got = append(got, string(n.Params.ProgressToken))
		}
	}
	if len(got) != len(tokens) {
		t.Fatalf("progress tokens %q, want %q", got, tokens)
	}
	for _, tok := range tokens {
		found := false
		for _, g := range got {
			found = found || g == tok
		}
		if !found {
			t.Errorf("token %s not echoed verbatim; got %q", tok, got)
		}
	}
}

// countingEndless yields bytes without a newline forever, counting them;
// it gives up (an error) only far beyond any bound the transport may read.
type countingEndless struct {
	head []byte
	b    byte
	n    atomic.Int64
}

const endlessGiveUp = 64 << 20

func (c *countingEndless) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		k := copy(p, c.head)
		c.head = c.head[k:]
		c.n.Add(int64(k))
		return k, nil
	}
	if c.n.Load() >= endlessGiveUp {
		return 0, errors.New("read far beyond the frame bound")
	}
	for i := range p {
		p[i] = c.b
	}
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// TestTransportOversizeStopsReading: an over-size frame that never ends
// (`serve </dev/zero`, an endless JSON string) is answered and the session
// ends after a bounded number of bytes, without waiting for a newline.
func TestTransportOversizeStopsReading(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]*countingEndless{
		"zeros":  {b: 0},
		"string": {head: []byte(initReq + "\n" + `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"slow","arguments":{"x":"`), b: 'a'},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			lines, oversized := runTransport(t, in)
			if n := in.n.Load(); n > MaxFrameBytes+2*idScanPrefix+int64(len(initReq)) {
				t.Fatalf("read %d bytes (the bound is about %d)", n, MaxFrameBytes)
			}
			if !oversized {
				t.Fatal("oversized not reported")
			}
			want := "null"
			if name == "string" {
				want = `"big"`
				findReply(t, lines, "1")
			}
			if r := findReply(t, lines, want); errCode(r) != -32600 {
				t.Fatalf("reply %v", r)
			}
		})
	}
}

var _ io.Reader = (*countingEndless)(nil)
