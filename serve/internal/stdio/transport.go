// Package stdio is serve's MCP transport: newline-delimited JSON-RPC over a
// process's stdin and stdout, with bounded frames (docs/mcp.md "Bounded
// frames"). It is an [mcp.Transport] like the go-sdk's own StdioTransport,
// which it replaces because that one ends the session on an oversized or
// malformed line without a reply, and refuses every write once Read has
// returned an error (modelcontextprotocol/go-sdk#1061), so a client that
// closes stdin after its last request would lose replies. This transport
// answers bad frames itself, with fixed copy that never echoes the caller's
// text, and withholds the end of input until every delivered request has
// been answered. It keeps request ids as the client wrote them (ids.go,
// docs/mcp.md "Request ids") and stops reading at an over-size frame
// without waiting for its newline.
//
// A handler may hand the transport the encoding of its result
// ([Transport.Rewrite]): serve writes the tools/list pages, which never
// change, from bytes encoded once.
//
// It lives inside serve (serve/internal) because nothing else speaks MCP:
// serve's protocol engine uses it, and no other package may.
package stdio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Frame limits.
const (
	// MaxFrameBytes bounds one inbound or outbound JSON-RPC frame, excluding
	// the newline and an optional trailing carriage return.
	MaxFrameBytes = 4 << 20
	// idScanPrefix is how much of an oversized or malformed frame is kept
	// to recover its request id.
	idScanPrefix = 64 << 10
	// WithholdLimit bounds how long Read withholds the end of input while
	// delivered requests are still unanswered.
	WithholdLimit = 2 * time.Second
)

// ErrFrameTooLarge is returned by the connection's Read (after every
// delivered request was answered) when an inbound frame exceeded
// [MaxFrameBytes]. The session then ends.
var ErrFrameTooLarge = errors.New("an inbound frame exceeded 4 MiB")

// MsgUnknownTool is the message of the invalid-params error for a tool name
// that is not registered: the one invalid-params message the transport
// writes as it is (every other error message is replaced by fixed copy).
const MsgUnknownTool = "Unknown tool."

// Transport is the bounded newline-delimited stdio transport. Set In and
// Out (and the hooks) before Connect; a Transport connects once.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// OnInputEnd is called once, from Read, when the input ended (end of
	// file, an I/O error or an oversized frame), before Read waits for
	// pending replies. serve ends every pending run wait with it.
	OnInputEnd func()
	// Rewritable names the methods whose results a handler may supply
	// pre-encoded ([Transport.Rewrite]).
	Rewritable []string

	mu   sync.Mutex
	conn *conn
}

// Connect starts reading In. It implements [mcp.Transport].
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	c := &conn{
		t:        t,
		out:      t.Out,
		incoming: make(chan readItem, 1),
		closed:   make(chan struct{}),
		pending:  make(map[jsonrpc.ID]int),
	}
	c.cond = sync.NewCond(&c.pmu)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	go c.readLoop(t.In)
	return c, nil
}

func (t *Transport) current() *conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conn
}

// Oversized reports whether the session ended because of an oversized
// frame.
func (t *Transport) Oversized() bool {
	c := t.current()
	if c == nil {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.tooLarge
}

// WaitIdle waits until every delivered request has been answered, or d
// has passed (used at a signal, when stdin is still open). A reply
// signals it; nothing polls.
func (t *Transport) WaitIdle(d time.Duration) {
	if c := t.current(); c != nil {
		c.waitAnswered(d)
	}
}

// Rewrite registers f for the reply to req, a request this transport read
// whose method is one of [Transport.Rewritable]: when its result is
// written, f gets the result as the go-sdk encoded it and returns the
// parts written in its place (their concatenation is the result). It
// reports false for any other request (another transport's, a method not
// listed), whose reply is written as encoded.
func (t *Transport) Rewrite(req mcp.Request, f func(result []byte) [][]byte) bool {
	extra := req.GetExtra()
	c := t.current()
	if extra == nil || c == nil {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	sl := c.slotsByExtra[extra]
	if sl == nil {
		return false
	}
	sl.rewrite = f
	return true
}

type readItem struct {
	msg jsonrpc.Message
	err error
}

// slot is a delivered request whose reply may be rewritten: the
// *mcp.RequestExtra the transport attached to it identifies it to
// [Transport.Rewrite], its id to Write.
type slot struct {
	id      jsonrpc.ID
	extra   *mcp.RequestExtra
	rewrite func([]byte) [][]byte
}

type conn struct {
	t        *Transport
	out      io.Writer
	wmu      sync.Mutex // serializes every write to out
	incoming chan readItem

	closeOnce sync.Once
	closed    chan struct{}

	pmu          sync.Mutex
	cond         *sync.Cond
	pending      map[jsonrpc.ID]int // delivered calls not yet answered
	npending     int
	slotsByID    map[jsonrpc.ID]*slot
	slotsByExtra map[*mcp.RequestExtra]*slot
	tooLarge     bool
	ended        bool
	// The calls handed to the SDK, by the client's id token and by the
	// SDK's id (ids.go).
	byRaw      map[string]int64
	byInternal map[int64]*inflight
	nextID     int64

	doc pyjson.Doc // parseFrame's, on the read loop's goroutine only
}

// SessionID implements [mcp.Connection]: a stdio session has none.
func (c *conn) SessionID() string { return "" }

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case it := <-c.incoming:
		if it.err == nil {
			if req, ok := it.msg.(*jsonrpc.Request); ok && req.IsCall() {
				c.pmu.Lock()
				c.pending[req.ID]++
				c.npending++
				if c.pending[req.ID] == 1 && c.rewritable(req.Method) {
					// A duplicate in-flight id is refused by the go-sdk;
					// only the first request of an id gets a slot.
					c.addSlot(req)
				}
				c.pmu.Unlock()
			}
			return it.msg, nil
		}
		c.endInput()
		c.waitAnswered(WithholdLimit)
		return nil, it.err
	}
}

func (c *conn) rewritable(method string) bool {
	for _, m := range c.t.Rewritable {
		if m == method {
			return true
		}
	}
	return false
}

// addSlot attaches a fresh *mcp.RequestExtra to req (the go-sdk hands it
// to the handler as the request's GetExtra) and records the slot; pmu is
// held.
func (c *conn) addSlot(req *jsonrpc.Request) {
	sl := &slot{id: req.ID, extra: &mcp.RequestExtra{}}
	req.Extra = sl.extra
	if c.slotsByID == nil {
		c.slotsByID = map[jsonrpc.ID]*slot{}
		c.slotsByExtra = map[*mcp.RequestExtra]*slot{}
	}
	c.slotsByID[req.ID] = sl
	c.slotsByExtra[sl.extra] = sl
}

// takeSlot removes and returns the slot of a reply's id, if any.
func (c *conn) takeSlot(id jsonrpc.ID) *slot {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	sl := c.slotsByID[id]
	if sl != nil {
		delete(c.slotsByID, id)
		delete(c.slotsByExtra, sl.extra)
	}
	return sl
}

// endInput runs the input-end hook once.
func (c *conn) endInput() {
	c.pmu.Lock()
	first := !c.ended
	c.ended = true
	c.pmu.Unlock()
	if first && c.t.OnInputEnd != nil {
		c.t.OnInputEnd()
	}
}

// waitAnswered blocks until every delivered call has been answered, the
// connection is closed, or limit has passed. Write and Close signal the
// condition; a timer signals the limit.
func (c *conn) waitAnswered(limit time.Duration) {
	expired := false
	timer := time.AfterFunc(limit, func() {
		c.pmu.Lock()
		expired = true
		c.cond.Broadcast()
		c.pmu.Unlock()
	})
	defer timer.Stop()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	for c.npending > 0 && !expired && !c.isClosed() {
		c.cond.Wait()
	}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if !isResp {
		if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodProgress {
			// The token the client chose, never the one the SDK was handed.
			params, ok := c.outboundProgress(req.Params)
			if !ok {
				return nil
			}
			msg = &jsonrpc.Request{Method: req.Method, Params: params}
		}
		data, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return err
		}
		if len(data) > MaxFrameBytes {
			// An oversized notification or call is dropped; none is
			// near the bound.
			return nil
		}
		return c.writeLine(data)
	}
	sl := c.takeSlot(resp.ID)
	rawID := c.clientID(resp.ID)
	var parts [][]byte // the frame after its head
	if resp.Error != nil {
		parts = [][]byte{errorMember(sanitizeRPCError(resp.Error))}
	} else {
		// The result is JSON the SDK just marshaled: frame it directly
		// instead of re-encoding (and re-compacting) a large tools/list.
		result := [][]byte{resp.Result}
		if len(resp.Result) == 0 {
			result = [][]byte{[]byte("null")}
		}
		if sl != nil && sl.rewrite != nil {
			result = sl.rewrite(resp.Result)
		}
		parts = append([][]byte{[]byte(`,"result":`)}, result...)
	}
	head := make([]byte, 0, len(rawID)+24)
	head = append(head, `{"jsonrpc":"2.0","id":`...)
	head = append(head, rawID...)
	parts = append(parts, []byte{'}'})
	size := len(head)
	for _, p := range parts {
		size += len(p)
	}
	if size > MaxFrameBytes {
		// Results are bounded by construction (result_too_large), so
		// this is unreachable.
		parts = [][]byte{errorMember(&jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rpcErrorCopy[jsonrpc.CodeInternalError]}), []byte{'}'}}
	}
	err := c.writeLine(append([][]byte{head}, parts...)...)
	c.pmu.Lock()
	if n := c.pending[resp.ID]; n > 0 {
		if n == 1 {
			delete(c.pending, resp.ID)
		} else {
			c.pending[resp.ID] = n - 1
		}
		c.npending--
		c.cond.Broadcast()
	}
	c.pmu.Unlock()
	return err
}

// errorMember is `,"error":<e>`.
func errorMember(e *jsonrpc.Error) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(`{"code":-32603,"message":"Internal error."}`)
	}
	return append([]byte(`,"error":`), b...)
}

// writeLine writes one frame, the concatenation of parts, and its newline.
// Small parts are joined into one write; a large one (a tools/list page)
// is written from its own buffer.
func (c *conn) writeLine(parts ...[]byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var buf []byte
	for _, p := range parts {
		if len(p) < 64<<10 {
			buf = append(buf, p...)
			continue
		}
		if len(buf) > 0 {
			if _, err := c.out.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		if _, err := c.out.Write(p); err != nil {
			return err
		}
	}
	buf = append(buf, '\n')
	_, err := c.out.Write(buf)
	return err
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.pmu.Lock()
		c.cond.Broadcast()
		c.pmu.Unlock()
		if rc, ok := c.t.In.(io.Closer); ok {
			rc.Close()
		}
	})
	return nil
}
