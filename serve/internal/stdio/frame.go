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

// writeErrorReply writes a transport-level error reply. id is the id token
// as the client wrote it (recoverID), or nil for null.
func (c *conn) writeErrorReply(id json.RawMessage, code int64, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	head := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	_ = c.writeLine(head, errorMember(&jsonrpc.Error{Code: code, Message: message}), []byte{'}'})
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
// exceeds MaxFrameBytes it returns its first 64 KiB and oversize true, and
// reads nothing more: the rest of the line is never waited for (an input
// without newlines, such as /dev/zero, would never end), so a session reads
// at most the bound plus one buffer. err is non-nil at end of input (a
// final unterminated frame is returned together with io.EOF).
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
		if len(f.buf) > MaxFrameBytes+2 || (rerr != bufio.ErrBufferFull && frameLen(f.buf) > MaxFrameBytes) {
			prefix := append([]byte(nil), f.buf[:min(len(f.buf), idScanPrefix)]...)
			f.buf = f.buf[:0]
			f.eof = true
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

func frameLen(b []byte) int { return len(trimEOL(b)) }

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
