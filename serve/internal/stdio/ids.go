package stdio

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Request ids (docs/mcp.md, "Request ids"). The go-sdk decodes every number
// id as a float64 and converts it to an int64, so 2^63 wraps, 2.5 becomes 2
// and 12345678901234567 becomes its float64 neighbour: a reply could carry
// another request's id. The transport therefore keeps each call's id as
// the token the client sent and hands the SDK a fresh integer of its own
// instead; a reply is written with the client's token, byte for byte. The
// same holds for the two places a client names a request or a call again:
// notifications/cancelled's requestId and a call's _meta.progressToken
// (echoed in notifications/progress).

// inflight is a call the SDK has been handed: its id token and, when the
// client asked for progress, its progressToken token, both as sent.
type inflight struct {
	raw   string
	token []byte
}

// idClass is what an id token may be.
type idClass int

const (
	idAbsent  idClass = iota // no id, or null: a notification
	idValid                  // a string or an integer
	idInvalid                // anything else: a fraction, an exponent, a bad string
)

// classifyID classifies an id token (nil: absent).
func classifyID(raw []byte) idClass {
	switch {
	case raw == nil || string(raw) == "null":
		return idAbsent
	case raw[0] == '"':
		// A string must be one the strict parser takes: valid UTF-8 and no
		// lone surrogate escape, so echoing it writes valid JSON.
		if pyjson.Valid(raw, fastOptions) {
			return idValid
		}
		return idInvalid
	case integerToken(raw):
		return idValid
	}
	return idInvalid
}

// integerToken reports whether raw is a JSON number without a fraction or
// an exponent: -?(0|[1-9][0-9]*).
func integerToken(raw []byte) bool {
	if len(raw) > 0 && raw[0] == '-' {
		raw = raw[1:]
	}
	if len(raw) == 0 || (raw[0] == '0' && len(raw) > 1) {
		return false
	}
	return allDigits(raw)
}

// exactID is the SDK's id for a response's id token when the SDK's own
// decoding keeps it exact (a string, or an integer within ±2^53: the
// server's own calls use small integers); ok is false otherwise, and such
// a response answers no call of this server.
func exactID(raw []byte) (jsonrpc.ID, bool) {
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		return jsonrpc2StringID(s), true
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > 1<<53 || n < -(1<<53) {
		return jsonrpc.ID{}, false
	}
	return jsonrpc2IntID(n), true
}

// register records a call about to be handed to the SDK and returns the
// id the SDK gets; ok is false when a call with the same id token is still
// in flight.
func (c *conn) register(raw, token []byte) (jsonrpc.ID, bool) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if _, busy := c.byRaw[string(raw)]; busy {
		return jsonrpc.ID{}, false
	}
	if c.byRaw == nil {
		c.byRaw = map[string]int64{}
		c.byInternal = map[int64]*inflight{}
	}
	c.nextID++
	n := c.nextID
	f := &inflight{raw: string(raw), token: token}
	c.byRaw[f.raw] = n
	c.byInternal[n] = f
	return jsonrpc2IntID(n), true
}

// internalOf returns the SDK's id of the in-flight call whose id token is
// raw.
func (c *conn) internalOf(raw []byte) (int64, bool) {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	n, ok := c.byRaw[string(raw)]
	return n, ok
}

// clientID returns the id token to write for a reply to id and forgets the
// call: the client's token for a call this transport handed over, null for
// no id, and the SDK's own encoding for anything else (unreachable: every
// call is handed over with an id of ours).
func (c *conn) clientID(id jsonrpc.ID) string {
	if !id.IsValid() {
		return "null"
	}
	if n, ok := id.Raw().(int64); ok {
		c.pmu.Lock()
		f := c.byInternal[n]
		if f != nil {
			delete(c.byInternal, n)
			delete(c.byRaw, f.raw)
		}
		c.pmu.Unlock()
		if f != nil {
			return f.raw
		}
	}
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return "null"
	}
	return string(b)
}

// progressToken returns the client's progressToken token of the in-flight
// call whose internal token (the number the SDK was handed) is raw.
func (c *conn) progressToken(raw []byte) ([]byte, bool) {
	if !integerToken(raw) {
		return nil, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, false
	}
	c.pmu.Lock()
	defer c.pmu.Unlock()
	f := c.byInternal[n]
	if f == nil || f.token == nil {
		return nil, false
	}
	return f.token, true
}

// splice returns a copy of outer (the source bytes of a value of the
// frame) with the member value at [off, off+n) of the frame replaced by
// repl; base is outer's offset in the frame.
func splice(outer []byte, base, off, n int, repl []byte) []byte {
	off -= base
	out := make([]byte, 0, len(outer)-n+len(repl))
	out = append(out, outer[:off]...)
	out = append(out, repl...)
	return append(out, outer[off+n:]...)
}

// outboundProgress rewrites a notifications/progress of the SDK: its
// progressToken, the internal token of a call, becomes the client's token.
// ok is false when the token names no call in flight (the notification is
// then not sent: an internal token never reaches the client).
func (c *conn) outboundProgress(params json.RawMessage) (json.RawMessage, bool) {
	var d pyjson.Doc
	if d.Parse(params, fastOptions) != nil {
		return nil, false
	}
	root := d.Root()
	tok := d.Get(root, "progressToken")
	if d.Kind(tok) != pyjson.Number {
		return nil, false
	}
	raw := d.Raw(tok)
	client, ok := c.progressToken(raw)
	if !ok {
		return nil, false
	}
	return splice(params, 0, d.Offset(tok), len(raw), client), true
}

// topLevelID finds the "id" member of the top-level object of frame, which
// may be cut short, by a token scan, and returns its value's source bytes.
// It returns nil when there is none, when "id" occurs twice, or when frame
// does not start an object.
func topLevelID(frame []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil
	}
	var found []byte
	seen := false
	depth := 1
	expectKey := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return found // cut short: what was seen so far
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return found
				}
			}
			if depth == 1 {
				expectKey = true
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
		expectKey = false
		if key, _ := tok.(string); key != "id" {
			continue
		}
		if seen {
			return nil
		}
		seen = true
		start := dec.InputOffset()
		val, err := dec.Token()
		if err != nil {
			return nil
		}
		expectKey = true
		switch val.(type) {
		case json.Delim:
			// An object or array: not an id; its contents are skipped.
			depth++
			found = nil
		default:
			end := dec.InputOffset()
			found = bytes.TrimLeft(frame[start:end], " \t\r\n:")
		}
	}
}

// recoverID returns the id token of a frame that could not be used (cut
// short, malformed, over-size), from its first 64 KiB: a string or an
// integer, as the client wrote it; nil (a null id) for anything else.
func recoverID(frame []byte) json.RawMessage {
	if len(frame) > idScanPrefix {
		frame = frame[:idScanPrefix]
	}
	raw := topLevelID(frame)
	if classifyID(raw) != idValid {
		return nil
	}
	return bytes.Clone(raw)
}
