package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
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

// parseFrame validates one line. Bad lines are answered here and never reach
// the SDK; ok is false for them. A frame of the plain shape every client
// sends is parsed once, by pyjson's strict core (fastMessage); any other
// line is checked by encoding/json and decoded by the SDK's own decoder, so
// what is a parse error or an invalid request stays the SDK's decision.
func (c *conn) parseFrame(line []byte) (jsonrpc.Message, bool) {
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
