//go:build windows

package mailbox

import (
	"errors"
	"io"
	"os"
)

// OpenTerminal opens the console (CONIN$ and CONOUT$). With no console it
// returns [ErrNoTerminal]: the client must refuse to start, never assume yes.
func OpenTerminal() (Terminal, io.Closer, error) {
	in, err := os.OpenFile("CONIN$", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, ErrNoTerminal
	}
	out, err := os.OpenFile("CONOUT$", os.O_RDWR, 0)
	if err != nil {
		in.Close()
		return nil, nil, ErrNoTerminal
	}
	return NewTerminal(in, out), closers{in, out}, nil
}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}
