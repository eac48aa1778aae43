package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Fixed JSON-RPC error copy. Outbound error messages are replaced by these
// by construction, so no caller-supplied text (method names, tool names,
// values) is ever echoed by the SDK's own error strings.
var rpcErrorCopy = map[int64]string{
	jsonrpc.CodeParseError:     "Parse error.",
	jsonrpc.CodeInvalidRequest: "Invalid Request.",
	jsonrpc.CodeMethodNotFound: "Method not found.",
	jsonrpc.CodeInvalidParams:  "Invalid params.",
	jsonrpc.CodeInternalError:  "Internal error.",
}

const (
	msgFrameTooLarge  = "Request exceeds the 4 MiB frame limit."
	codeUnsupportedPV = mcp.CodeUnsupportedProtocolVersion
)

// parseFrame validates one line and returns the message to hand to the
// SDK. Bad lines are answered here and never reach the SDK; ok is false for
// them. A frame is read once, by pyjson's strict core: a key repeated at
// any depth is a parse error, never read last-wins. A frame the strict core
// refuses for another reason (a lone surrogate escape, a byte that is not
// UTF-8) is read as encoding/json reads it, repeated keys still refused,
// and re-encoded so the SDK sees exactly that reading (lenientFrame). Ids
// are mapped as docs/mcp.md "Request ids" says (ids.go).
func (c *conn) parseFrame(line []byte) (jsonrpc.Message, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, false
	}
	d := &c.doc
	src := line
	if err := d.Parse(line, fastOptions); err != nil {
		var se *pyjson.SyntaxError
		var lerr error
		if !errors.As(err, &se) || se.Msg != "duplicate key" {
			src, lerr = lenientFrame(line)
		} else {
			lerr = errParse
		}
		switch {
		case errors.Is(lerr, errParse):
			c.writeErrorReply(recoverID(line), jsonrpc.CodeParseError, rpcErrorCopy[jsonrpc.CodeParseError])
			return nil, false
		case lerr != nil || d.Parse(src, fastOptions) != nil:
			c.invalidRequest()
			return nil, false
		}
	}
	root := d.Root()
	if !jsonRPCShape(d, root) {
		c.invalidRequest()
		return nil, false
	}
	// The id as the client wrote it: from the line itself when it was
	// re-encoded.
	var rawID []byte
	if idV := d.Get(root, "id"); idV != pyjson.None {
		rawID = d.Raw(idV)
		if &src[0] != &line[0] {
			rawID = topLevelID(line)
		}
	}
	class := classifyID(rawID)
	if class == idInvalid {
		c.invalidRequest()
		return nil, false
	}
	if d.Get(root, "method") == pyjson.None {
		// A response to a call of this server.
		msg, err := jsonrpc.DecodeMessage(src)
		resp, isResp := msg.(*jsonrpc.Response)
		if err != nil || !isResp {
			c.invalidRequest()
			return nil, false
		}
		if resp.ID, isResp = exactID(rawID); !isResp {
			return nil, false // it answers no call of ours
		}
		return resp, true
	}
	req := plainRequest(d, root)
	if req == nil {
		msg, err := jsonrpc.DecodeMessage(src)
		var isReq bool
		if req, isReq = msg.(*jsonrpc.Request); err != nil || !isReq {
			c.invalidRequest()
			return nil, false
		}
	}
	params := d.Get(root, "params")
	if class == idValid {
		var tok pyjson.V = pyjson.None
		if meta := d.Get(params, "_meta"); d.Kind(meta) == pyjson.Object {
			if t := d.Get(meta, "progressToken"); d.Kind(t) == pyjson.String || d.Kind(t) == pyjson.Number {
				tok = t
			}
		}
		var token []byte
		if tok != pyjson.None {
			token = bytes.Clone(d.Raw(tok))
		}
		id, ok := c.register(rawID, token)
		if !ok {
			// Another call with this id token is in flight.
			c.invalidRequest()
			return nil, false
		}
		req.ID = id
		if tok != pyjson.None {
			// The SDK gets the call's own number as its progress token.
			n, _ := id.Raw().(int64)
			req.Params = splice(d.Raw(params), d.Offset(params), d.Offset(tok), len(d.Raw(tok)), strconv.AppendInt(nil, n, 10))
		}
		return req, true
	}
	req.ID = jsonrpc.ID{}
	if req.Method == methodCancelled {
		// The request it names is the in-flight call with that id token;
		// naming none, it cancels nothing and is dropped.
		rid := d.Get(params, "requestId")
		if classifyID(d.Raw(rid)) != idValid {
			return nil, false
		}
		n, ok := c.internalOf(d.Raw(rid))
		if !ok {
			return nil, false
		}
		req.Params = splice(d.Raw(params), d.Offset(params), d.Offset(rid), len(d.Raw(rid)), strconv.AppendInt(nil, n, 10))
	}
	return req, true
}

const (
	methodCancelled = "notifications/cancelled"
	methodProgress  = "notifications/progress"
)

// invalidRequest answers a frame that is JSON but not a request this
// server takes: -32600 with a null id.
func (c *conn) invalidRequest() {
	c.writeErrorReply(nil, jsonrpc.CodeInvalidRequest, rpcErrorCopy[jsonrpc.CodeInvalidRequest])
}

// errParse is lenientFrame's answer for a line that is not exactly one
// JSON value, or repeats a key; errTooDeep for nesting beyond the SDK's.
var (
	errParse   = errors.New("parse error")
	errTooDeep = errors.New("nested too deep")
)

// lenientFrame reads a line the strict parser refused the way encoding/json
// reads it (invalid UTF-8 and lone surrogate escapes become U+FFFD), with
// a key repeated in one object (after that repair) refused, and returns
// the strict JSON of that reading. It is the SDK's reading of the line, so
// what the SDK is handed is what was checked.
func lenientFrame(line []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	v, err := lenientValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errParse // more than one value
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, errParse
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func lenientValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, errParse
	}
	open, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	if depth >= sdkMaxDepth {
		return nil, errTooDeep
	}
	var v any
	switch open {
	case '{':
		m := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			k, isKey := kt.(string)
			if err != nil || !isKey {
				return nil, errParse
			}
			if _, dup := m[k]; dup {
				return nil, errParse
			}
			if m[k], err = lenientValue(dec, depth+1); err != nil {
				return nil, err
			}
		}
		v = m
	case '[':
		a := []any{}
		for dec.More() {
			e, err := lenientValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, e)
		}
		v = a
	default:
		return nil, errParse
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return nil, errParse
	}
	return v, nil
}

// sanitizeRPCError replaces the message of an outbound JSON-RPC error with
// fixed copy for its code. The go-sdk formats caller-supplied method and tool
// names into its messages, which could carry protected text; nothing of
// that survives here (docs/mcp.md "Error codes").
func sanitizeRPCError(err error) *jsonrpc.Error {
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rpcErrorCopy[jsonrpc.CodeInternalError]}
	}
	switch we.Code {
	case jsonrpc.CodeInvalidParams:
		if we.Message == MsgUnknownTool {
			return &jsonrpc.Error{Code: we.Code, Message: MsgUnknownTool}
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

// sdkMaxDepth is the nesting bound of the go-sdk's decoder (its
// jsonrpc.DecodeMessage refuses deeper frames).
const sdkMaxDepth = 1000

// fastOptions are the strict rules every frame is read under: no repeated
// key (which encoding/json would resolve to the last), valid UTF-8 and no
// lone surrogate escape (which it would repair to U+FFFD), nested at most
// sdkMaxDepth deep, no byte order mark. Numbers stay tokens.
var fastOptions = pyjson.Options{MaxDepth: sdkMaxDepth, Floats: pyjson.FloatRefuse}

// plainRequest builds the request jsonrpc.DecodeMessage would return,
// but for its id (the transport sets that), for a parsed frame of the
// plain shape every client sends: members jsonrpc, method, id and params
// only, a method string without escapes, params absent or an object.
// Anything else returns nil and is left to the SDK's decoder.
// TestPlainRequestMatchesSDK and FuzzPlainRequest check it against
// DecodeMessage.
func plainRequest(d *pyjson.Doc, root pyjson.V) *jsonrpc.Request {
	for k := range d.Members(root) {
		// Another member (anything unknown) is the SDK's to judge.
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
		req.Params = bytes.Clone(d.Raw(p)) // the frame is the reader's buffer
	}
	return req
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

// jsonRPCShape reports whether the top-level value of a parsed frame is a
// JSON-RPC 2.0 request, notification or response: an object with
// "jsonrpc":"2.0", an id (when present) that is null, a string or a
// number, and either a method string (with params absent, null, an object
// or an array) or a result or an error.
func jsonRPCShape(d *pyjson.Doc, root pyjson.V) bool {
	if d.Kind(root) != pyjson.Object || !d.StrIs(d.Get(root, "jsonrpc"), "2.0") {
		return false
	}
	id := d.Get(root, "id")
	switch d.Kind(id) {
	case pyjson.Invalid, pyjson.Null, pyjson.String, pyjson.Number:
	default:
		return false
	}
	if m := d.Get(root, "method"); m != pyjson.None {
		if d.Kind(m) != pyjson.String {
			return false
		}
		switch d.Kind(d.Get(root, "params")) {
		case pyjson.Invalid, pyjson.Null, pyjson.Object, pyjson.Array:
			return true
		}
		return false
	}
	return id != pyjson.None && (d.Get(root, "result") != pyjson.None || d.Get(root, "error") != pyjson.None)
}
