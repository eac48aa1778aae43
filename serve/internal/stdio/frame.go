package stdio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// readLoop reads frames until EOF, an I/O error or an oversized frame.
func (c *conn) readLoop(in io.Reader) {
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

func (c *conn) deliver(it readItem) bool {
	select {
	case c.incoming <- it:
		return true
	case <-c.closed:
		return false
	}
}

// writeErrorReply writes a transport-level error reply. id is the raw JSON of
// a recovered id, or nil for null.
func (c *conn) writeErrorReply(id json.RawMessage, code int64, message string) {
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
