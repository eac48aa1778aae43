package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit codes. [exitCode] is the only place that maps errors to them.
const (
	exitOK     = 0 // success
	exitFailed = 1 // a check failed, a request was refused, or an input cannot be used
	exitUsage  = 2 // usage error: the command line itself is wrong (stdout stays empty)
)

// usageErr marks an error as a usage or input error (exit 2).
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }
func (e *usageErr) Unwrap() error { return e.err }

// usageError marks err as a usage or input error: exit 2.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &usageErr{err: err}
}

// usageErrorf formats a usage or input error: exit 2.
func usageErrorf(format string, a ...any) error {
	return usageError(fmt.Errorf(format, a...))
}

// errCheckFailed makes the command exit 1 without printing anything more. Use
// it when the command's output already says what failed.
var errCheckFailed = errors.New("check failed")

// hintErr carries hint lines printed after the error.
type hintErr struct {
	err   error
	hints []string
}

func (e *hintErr) Error() string { return e.err.Error() }
func (e *hintErr) Unwrap() error { return e.err }

// withHint attaches a hint, printed as "openadapt-agent: hint: …" after the
// error line. The exit code is that of err.
func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	var h *hintErr
	if errors.As(err, &h) {
		h.hints = append(h.hints, hint)
		return err
	}
	return &hintErr{err: err, hints: []string{hint}}
}

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	var u *usageErr
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &u):
		return exitUsage
	default:
		return exitFailed
	}
}

// printError prints err once, with its hints, unless it is errCheckFailed.
func printError(w io.Writer, err error) {
	if err == nil || errors.Is(err, errCheckFailed) {
		return
	}
	fmt.Fprintf(w, "openadapt-agent: error: %s\n", oneLine(err.Error()))
	var h *hintErr
	if errors.As(err, &h) {
		for _, hint := range h.hints {
			fmt.Fprintf(w, "openadapt-agent: hint: %s\n", oneLine(hint))
		}
	}
}

// oneLine keeps an error message on one line so that it cannot forge extra
// output lines.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029'
	}), " ")
}
