package mailbox

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
)

// Terminal is the person's controlling terminal: the Allow prompt and the
// pause prompt are asked there, never on stdin/stdout (which may be a pipe or
// another program). [OpenTerminal] opens the real one.
type Terminal interface {
	// Confirm writes question and " [y/N] " and reads one line; only "y" or
	// "yes" (any case, trimmed) is yes.
	Confirm(ctx context.Context, question string) (bool, error)
	// WaitEnter writes message and waits for one line.
	WaitEnter(ctx context.Context, message string) error
}

// ErrNoTerminal means there is no controlling terminal to ask the person on.
var ErrNoTerminal = errors.New("no controlling terminal")

// rwTerminal is a Terminal over a reader and a writer (the opened tty).
type rwTerminal struct {
	mu  sync.Mutex
	r   *bufio.Reader
	w   io.Writer
	out chan lineResult // the one outstanding read, if any
}

type lineResult struct {
	line string
	err  error
}

// NewTerminal is a Terminal that writes prompts to w and reads answers from
// r. Tests use it with pipes; [OpenTerminal] uses it with the tty.
func NewTerminal(r io.Reader, w io.Writer) Terminal {
	return &rwTerminal{r: bufio.NewReaderSize(r, 512), w: w}
}

const maxAnswer = 256

// readLine reads one line, giving up when ctx ends. A read abandoned by ctx
// stays outstanding and its line is used by the next call, so no keystroke is
// lost or read twice.
func (t *rwTerminal) readLine(ctx context.Context) (string, error) {
	t.mu.Lock()
	if t.out == nil {
		ch := make(chan lineResult, 1)
		t.out = ch
		go func() {
			var b strings.Builder
			for {
				c, err := t.r.ReadByte()
				if err != nil {
					ch <- lineResult{b.String(), err}
					return
				}
				if c == '\n' {
					ch <- lineResult{b.String(), nil}
					return
				}
				if b.Len() < maxAnswer {
					b.WriteByte(c)
				}
			}
		}()
	}
	ch := t.out
	t.mu.Unlock()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-ch:
		t.mu.Lock()
		t.out = nil
		t.mu.Unlock()
		if r.err != nil && !(r.err == io.EOF && r.line != "") {
			return "", ErrNoTerminal
		}
		return strings.TrimRight(r.line, "\r"), nil
	}
}

func (t *rwTerminal) Confirm(ctx context.Context, question string) (bool, error) {
	if _, err := io.WriteString(t.w, question+" [y/N] "); err != nil {
		return false, ErrNoTerminal
	}
	line, err := t.readLine(ctx)
	if err != nil {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

func (t *rwTerminal) WaitEnter(ctx context.Context, message string) error {
	if _, err := io.WriteString(t.w, message+" "); err != nil {
		return ErrNoTerminal
	}
	_, err := t.readLine(ctx)
	return err
}
