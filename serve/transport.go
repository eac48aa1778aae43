package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Frame limits (mcp-surface.md §12).
const (
	// MaxFrameBytes bounds one inbound or outbound JSON-RPC frame, excluding the
	// newline and an optional trailing carriage return.
	MaxFrameBytes = 4 << 20
	// idScanPrefix is how much of an oversized or malformed frame is kept to
	// recover its request id.
	idScanPrefix = 64 << 10
	// withholdLimit bounds how long Read withholds EOF while delivered requests
	// are still unanswered.
	withholdLimit = 2 * time.Second
)

// ErrFrameTooLarge is returned by the transport's Read (after every delivered
// request was answered) when an inbound frame exceeded [MaxFrameBytes]. The
// session then ends with exit status 1.
var ErrFrameTooLarge = errors.New("an inbound frame exceeded 4 MiB")

// Fixed JSON-RPC error copy. Outbound error messages are replaced by these by
// construction, so no caller-supplied text (method names, tool names, values)
// is ever echoed by the SDK's own error strings.
var rpcErrorCopy = map[int64]string{
	jsonrpc.CodeParseError:     "Parse error.",
	jsonrpc.CodeInvalidRequest: "Invalid Request.",
	jsonrpc.CodeMethodNotFound: "Method not found.",
	jsonrpc.CodeInvalidParams:  "Invalid params.",
	jsonrpc.CodeInternalError:  "Internal error.",
}

const (
	msgUnknownTool    = "Unknown tool."
	msgFrameTooLarge  = "Request exceeds the 4 MiB frame limit."
	codeUnsupportedPV = mcp.CodeUnsupportedProtocolVersion
)

// framedTransport is the bounded newline-delimited stdio transport of
// mcp-surface.md §12. The go-sdk StdioTransport ends the session on an
// oversized or malformed line without a reply, and its connection refuses
// every write once Read has returned an error (go-sdk#1061), so a client that
// closes stdin after its last request loses replies. This transport answers
// bad frames itself and withholds EOF until every delivered request has been
// answered.
type framedTransport struct {
	in  io.Reader
	out io.Writer
	// onInputEnd is called once, from Read, when the input ended (EOF, an
	// I/O error or an oversized frame), before Read waits for pending replies.
	// The run manager uses it to end every pending wait at once.
	onInputEnd func()
	// sessionID is the connection's session id (toolPages.sessionID: it
	// tells the tools/list middleware that expand will run on its result).
	sessionID string
	// expand, when set, splits a successful result into the parts written
	// in its place (toolPages.expand: a pre-encoded tools/list page, written
	// from the cache without a copy).
	expand func([]byte) [][]byte

	mu   sync.Mutex
	conn *framedConn
}

func (t *framedTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &framedConn{
		t:        t,
		out:      t.out,
		incoming: make(chan readItem, 1),
		closed:   make(chan struct{}),
		pending:  make(map[jsonrpc.ID]int),
	}
	c.cond = sync.NewCond(&c.pmu)
	t.mu.Lock()
	t.conn = c
	t.mu.Unlock()
	go c.readLoop(t.in)
	return c, nil
}

// oversized reports whether the session ended because of an oversized frame.
func (t *framedTransport) oversized() bool {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c == nil {
		return false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	return c.tooLarge
}

// waitIdle waits until every delivered request has been answered, or d has
// passed (used at a signal, when stdin is still open).
func (t *framedTransport) waitIdle(d time.Duration) {
	t.mu.Lock()
	c := t.conn
	t.mu.Unlock()
	if c != nil {
		c.waitAnswered(d)
	}
}

type readItem struct {
	msg jsonrpc.Message
	err error
}

type framedConn struct {
	t        *framedTransport
	out      io.Writer
	wmu      sync.Mutex // serializes every write to out
	incoming chan readItem

	closeOnce sync.Once
	closed    chan struct{}

	pmu      sync.Mutex
	cond     *sync.Cond
	pending  map[jsonrpc.ID]int // delivered calls not yet answered
	npending int
	tooLarge bool
	ended    bool

	doc pyjson.Doc // parseFrame's, on the read loop's goroutine only
}

func (c *framedConn) SessionID() string { return c.t.sessionID }

func (c *framedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
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
				c.pmu.Unlock()
			}
			return it.msg, nil
		}
		c.endInput()
		c.waitAnswered(withholdLimit)
		return nil, it.err
	}
}

// endInput runs the input-end hook once.
func (c *framedConn) endInput() {
	c.pmu.Lock()
	first := !c.ended
	c.ended = true
	c.pmu.Unlock()
	if first && c.t.onInputEnd != nil {
		c.t.onInputEnd()
	}
}

// waitAnswered blocks until every delivered call has been answered, the
// connection is closed, or limit has passed. Write and Close signal the
// condition; a timer signals the limit.
func (c *framedConn) waitAnswered(limit time.Duration) {
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

func (c *framedConn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

func (c *framedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp && resp.Error != nil {
		resp = &jsonrpc.Response{ID: resp.ID, Error: sanitizeRPCError(resp.Error)}
		msg = resp
	}
	var data []byte
	var err error
	var parts [][]byte // the frame: data, then these
	if isResp && resp.Error == nil && len(resp.Result) > 0 {
		// The result is JSON the SDK just marshaled: frame it directly
		// instead of re-encoding (and re-compacting) a large tools/list.
		id, ierr := json.Marshal(resp.ID.Raw())
		if ierr != nil {
			return ierr
		}
		parts = [][]byte{resp.Result}
		if c.t.expand != nil {
			parts = c.t.expand(resp.Result)
		}
		data = make([]byte, 0, len(id)+40)
		data = append(data, `{"jsonrpc":"2.0","id":`...)
		data = append(data, id...)
		data = append(data, `,"result":`...)
		parts = append(parts, []byte{'}'})
	} else if data, err = jsonrpc.EncodeMessage(msg); err != nil {
		return err
	}
	size := len(data)
	for _, p := range parts {
		size += len(p)
	}
	if size > MaxFrameBytes {
		if !isResp {
			// An oversized notification is dropped; results are bounded by
			// construction (result_too_large), so this is unreachable.
			return nil
		}
		parts = nil
		data, err = jsonrpc.EncodeMessage(&jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rpcErrorCopy[jsonrpc.CodeInternalError]}})
		if err != nil {
			return err
		}
	}
	err = c.writeLine(append([][]byte{data}, parts...)...)
	if isResp {
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
	}
	return err
}

// writeLine writes one frame, the concatenation of parts, and its newline.
// Small parts are joined into one write; a large one (a tools/list page)
// is written from its own buffer.
func (c *framedConn) writeLine(parts ...[]byte) error {
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

func (c *framedConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.pmu.Lock()
		c.cond.Broadcast()
		c.pmu.Unlock()
		if rc, ok := c.t.in.(io.Closer); ok {
			rc.Close()
		}
	})
	return nil
}

// sanitizeRPCError replaces the message of an outbound JSON-RPC error with
// fixed copy for its code. The go-sdk formats caller-supplied method and tool
// names into its messages (§3.1, §13.10); nothing of that survives here.
func sanitizeRPCError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rpcErrorCopy[jsonrpc.CodeInternalError]}
	}
	switch we.Code {
	case jsonrpc.CodeInvalidParams:
		if we.Message == msgUnknownTool {
			return &jsonrpc.Error{Code: we.Code, Message: msgUnknownTool}
		}
	case codeUnsupportedPV:
		// Keep the supported list, drop the caller's requested version.
		var d struct {
			Supported []string `json:"supported"`
		}
		_ = json.Unmarshal(we.Data, &d)
		data, _ := json.Marshal(d)
		return &jsonrpc.Error{Code: we.Code, Message: "Unsupported protocol version.", Data: data}
	case 0:
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rpcErrorCopy[jsonrpc.CodeInternalError]}
	}
	if m, ok := rpcErrorCopy[we.Code]; ok {
		return &jsonrpc.Error{Code: we.Code, Message: m}
	}
	return &jsonrpc.Error{Code: we.Code, Message: "Request failed."}
}

// readLoop reads frames until EOF, an I/O error or an oversized frame.
func (c *framedConn) readLoop(in io.Reader) {
	fr := newFrameReader(in)
	for {
		line, oversize, err := fr.next()
		if oversize {
			c.writeErrorReply(recoverID(line), jsonrpc.CodeInvalidRequest, msgFrameTooLarge)
			c.pmu.Lock()
			c.tooLarge = true
			c.pmu.Unlock()
			c.deliver(readItem{err: ErrFrameTooLarge})
			return
		}
		if line != nil {
			if msg, ok := c.parseFrame(line); ok {
				if !c.deliver(readItem{msg: msg}) {
					return
				}
			}
		}
		if err != nil {
			c.deliver(readItem{err: err})
			return
		}
	}
}

func (c *framedConn) deliver(it readItem) bool {
	select {
	case c.incoming <- it:
		return true
	case <-c.closed:
		return false
	}
}

// parseFrame validates one line. Bad lines are answered here and never reach
// the SDK; ok is false for them. A frame of the plain shape every client
// sends is parsed once, by pyjson's strict core (fastMessage); any other
// line is checked by encoding/json and decoded by the SDK's own decoder, so
// what is a parse error or an invalid request stays the SDK's decision.
func (c *framedConn) parseFrame(line []byte) (jsonrpc.Message, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, false
	}
	if msg := fastMessage(&c.doc, line); msg != nil {
		return msg, true
	}
	// json.Unmarshal checks the whole line first (what json.Valid does) and
	// reports invalid JSON as a *json.SyntaxError; valid JSON that is not an
	// object gives another error or a nil map.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			c.writeErrorReply(recoverID(line), jsonrpc.CodeParseError, rpcErrorCopy[jsonrpc.CodeParseError])
			return nil, false
		}
		m = nil
	}
	if _, ok := jsonRPCShape(m); !ok {
		c.writeErrorReply(nil, jsonrpc.CodeInvalidRequest, rpcErrorCopy[jsonrpc.CodeInvalidRequest])
		return nil, false
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.writeErrorReply(nil, jsonrpc.CodeInvalidRequest, rpcErrorCopy[jsonrpc.CodeInvalidRequest])
		return nil, false
	}
	return msg, true
}

// sdkMaxDepth is the nesting bound of the go-sdk's decoder (its
// jsonrpc.DecodeMessage refuses deeper frames).
const sdkMaxDepth = 1000

// fastOptions: a frame pyjson accepts under these rules is one the SDK's
// decoder (encoding/json) reads the same way: no duplicate key (which
// encoding/json would resolve to the last), valid UTF-8 and no lone
// surrogate escape (which it would repair to U+FFFD), nested at most
// sdkMaxDepth deep, no byte order mark. Numbers stay tokens.
var fastOptions = pyjson.Options{MaxDepth: sdkMaxDepth, Floats: pyjson.FloatRefuse}

// fastMessage builds the request jsonrpc.DecodeMessage would return for a
// frame of the plain shape every client sends, parsing it once into d (a
// Doc reused frame after frame): a strict JSON object under fastOptions
// with "jsonrpc":"2.0", a method string without escapes, an id that is
// absent, null, a decimal integer of at most 15 digits or a printable-ASCII
// string without escapes, and params absent or an object. Anything else
// returns nil and is left to encoding/json and the SDK's decoder.
// TestFastMessageMatchesSDK and FuzzFastMessage check it against
// DecodeMessage.
func fastMessage(d *pyjson.Doc, line []byte) *jsonrpc.Request {
	if d.Parse(line, fastOptions) != nil {
		return nil
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object || string(d.Raw(d.Get(root, "jsonrpc"))) != `"2.0"` {
		return nil
	}
	for k := range d.Members(root) {
		// Another member (result, error, anything unknown) is the SDK's
		// to judge.
		switch string(d.Bytes(k)) {
		case "jsonrpc", "method", "id", "params":
		default:
			return nil
		}
	}
	rawMethod := d.Raw(d.Get(root, "method"))
	if !plainString(rawMethod) {
		return nil
	}
	req := &jsonrpc.Request{Method: string(rawMethod[1 : len(rawMethod)-1])}
	if p := d.Get(root, "params"); p != pyjson.None {
		if d.Kind(p) != pyjson.Object {
			return nil
		}
		req.Params = bytes.Clone(d.Raw(p)) // line is the reader's buffer
	}
	if id := d.Get(root, "id"); id != pyjson.None && d.Kind(id) != pyjson.Null {
		var ok bool
		if req.ID, ok = plainID(d.Raw(id)); !ok {
			return nil
		}
	}
	return req
}

// plainID is the request id of a plain frame, a printable-ASCII string or
// an integer of at most 15 digits; anything else is the SDK's to judge.
func plainID(rawID []byte) (jsonrpc.ID, bool) {
	switch {
	case plainString(rawID):
		return jsonrpc2StringID(string(rawID[1 : len(rawID)-1])), true
	case len(rawID) <= 15 && allDigits(rawID):
		n, err := strconv.ParseInt(string(rawID), 10, 64)
		if err != nil {
			return jsonrpc.ID{}, false
		}
		return jsonrpc2IntID(n), true
	}
	return jsonrpc.ID{}, false
}

// plainString reports whether raw is a JSON string of printable ASCII with
// no escape sequence.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, b := range raw[1 : len(raw)-1] {
		if b < 0x20 || b > 0x7e || b == '\\' || b == '"' {
			return false
		}
	}
	return true
}

func allDigits(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	for _, b := range raw {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// jsonrpc2StringID and jsonrpc2IntID make the ids DecodeMessage makes for a
// string and for an integer (it decodes numbers as float64; integers of at
// most 15 digits are exact there).
func jsonrpc2StringID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s)
	return id
}

func jsonrpc2IntID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}

// jsonRPCShape reports whether the members of one JSON object (nil: the
// frame is not an object) form a JSON-RPC 2.0 request, notification or
// response, and returns the method of a request.
func jsonRPCShape(m map[string]json.RawMessage) (string, bool) {
	if m == nil {
		return "", false
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		return "", false
	}
	if id, ok := m["id"]; ok {
		switch {
		case bytes.Equal(id, []byte("null")):
		case len(id) > 0 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')):
		default:
			return "", false
		}
	}
	if method, ok := m["method"]; ok {
		var s string
		if json.Unmarshal(method, &s) != nil {
			return "", false
		}
		if p, ok := m["params"]; ok && len(p) > 0 && p[0] != '{' && p[0] != '[' && !bytes.Equal(p, []byte("null")) {
			return "", false
		}
		return s, true
	}
	_, hasID := m["id"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	return "", hasID && (hasResult || hasError)
}

// writeErrorReply writes a transport-level error reply. id is the raw JSON of
// a recovered id, or nil for null.
func (c *framedConn) writeErrorReply(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	reply := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}}
	data, err := json.Marshal(reply)
	if err != nil {
		return
	}
	_ = c.writeLine(data)
}

// recoverID token-scans the first 64 KiB of a frame for a top-level "id"
// member whose value is a string or a number, and returns its JSON text.
func recoverID(frame []byte) json.RawMessage {
	if len(frame) > idScanPrefix {
		frame = frame[:idScanPrefix]
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	depth := 1
	expectKey := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return nil
				}
				if depth == 1 {
					expectKey = true
				}
			}
			continue
		}
		if depth != 1 {
			continue
		}
		if !expectKey {
			expectKey = true
			continue
		}
		key, _ := tok.(string)
		expectKey = false
		if key != "id" {
			continue
		}
		val, err := dec.Token()
		if err != nil {
			return nil
		}
		expectKey = true
		switch v := val.(type) {
		case string:
			b, _ := json.Marshal(v)
			return b
		case json.Number:
			return json.RawMessage(v.String())
		case json.Delim:
			if v == '{' || v == '[' {
				depth++
				expectKey = false
			}
		}
	}
}

// frameReader reads newline-delimited frames with a fixed memory bound.
type frameReader struct {
	r   *bufio.Reader
	buf []byte
	eof bool
}

func newFrameReader(in io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(in, idScanPrefix)}
}

// next returns the next frame without its line terminator. When the frame
// exceeds MaxFrameBytes it returns its first 64 KiB and oversize true, having
// discarded the rest of the line. err is non-nil at end of input (a final
// unterminated frame is returned together with io.EOF).
func (f *frameReader) next() (line []byte, oversize bool, err error) {
	if f.eof {
		return nil, false, io.EOF
	}
	f.buf = f.buf[:0]
	for {
		chunk, rerr := f.r.ReadSlice('\n')
		f.grow(len(chunk))
		f.buf = append(f.buf, chunk...)
		// +2 leaves room for "\r\n", which does not count toward the bound.
		if len(f.buf) > MaxFrameBytes+2 || (rerr == nil && frameLen(f.buf) > MaxFrameBytes) || (rerr != nil && rerr != bufio.ErrBufferFull && frameLen(f.buf) > MaxFrameBytes) {
			prefix := append([]byte(nil), f.buf[:min(len(f.buf), idScanPrefix)]...)
			f.buf = f.buf[:0]
			if rerr == bufio.ErrBufferFull {
				rerr = f.discardLine()
			}
			if rerr != nil && rerr != io.EOF {
				f.eof = true
			}
			if rerr == io.EOF {
				f.eof = true
			}
			return prefix, true, nil
		}
		switch rerr {
		case nil:
			return trimEOL(f.buf), false, nil
		case bufio.ErrBufferFull:
			continue
		default:
			f.eof = true
			if len(f.buf) > 0 {
				return trimEOL(f.buf), false, rerr
			}
			return nil, false, rerr
		}
	}
}

// grow makes room for n more bytes, never beyond the frame bound plus one
// read chunk, so memory stays bounded whatever the input.
func (f *frameReader) grow(n int) {
	need := len(f.buf) + n
	if need <= cap(f.buf) {
		return
	}
	c := max(2*cap(f.buf), need, 4096)
	c = min(c, MaxFrameBytes+2+idScanPrefix)
	c = max(c, need)
	nb := make([]byte, len(f.buf), c)
	copy(nb, f.buf)
	f.buf = nb
}

func (f *frameReader) discardLine() error {
	for {
		_, err := f.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue
		}
		return err
	}
}

func frameLen(b []byte) int { return len(trimEOL(b)) }

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
