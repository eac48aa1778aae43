package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// readLinkLine reads one line, the runner link of `authoring connect -`,
// from r: at most limit+1 bytes are ever read (a longer line is returned
// cut there, for the link check to refuse), and a canceled ctx (SIGINT,
// SIGTERM) ends the wait at once with an error wrapping ctx's. The read itself cannot
// be interrupted, so it is left to finish in the background; the command
// is ending then. A line ends at "\n" (a "\r" before it is dropped) or at
// the end of input; no input at all, or a read error, is a usage error.
func readLinkLine(ctx context.Context, r io.Reader, limit int) (string, error) {
	type result struct {
		line []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		buf := make([]byte, limit+1)
		n := 0
		for n < len(buf) {
			k, err := r.Read(buf[n:])
			if i := bytes.IndexByte(buf[n:n+k], '\n'); i >= 0 {
				done <- result{buf[:n+i], nil}
				return
			}
			n += k
			if err == io.EOF && n > 0 {
				break // a last line without its newline
			}
			if err != nil {
				done <- result{nil, err}
				return
			}
		}
		done <- result{buf[:n], nil}
	}()
	select {
	case <-ctx.Done():
		return "", fmt.Errorf("authoring connect: reading the runner link from stdin: %w", ctx.Err())
	case res := <-done:
		if errors.Is(res.err, io.EOF) {
			return "", usageErrorf("reading the runner link from stdin: nothing was read")
		} else if res.err != nil {
			return "", usageErrorf("reading the runner link from stdin: %v", res.err)
		}
		return string(bytes.TrimSuffix(res.line, []byte("\r"))), nil
	}
}
