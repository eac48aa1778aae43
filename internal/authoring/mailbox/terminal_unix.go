//go:build !windows

package mailbox

import (
	"io"
	"os"
)

// OpenTerminal opens the controlling terminal (/dev/tty). With no
// controlling terminal (a service, a pipe-only session, CI) it returns
// [ErrNoTerminal]: the client must refuse to start, never assume yes.
func OpenTerminal() (Terminal, io.Closer, error) {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, ErrNoTerminal
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		f.Close()
		return nil, nil, ErrNoTerminal
	}
	return NewTerminal(f, f), f, nil
}
