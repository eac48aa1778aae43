package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// failureMediaType identifies the failure document that every command given
// --json prints when it exits 1 without having printed its own document
// (one JSON document on stdout for exit 0 and exit 1).
// Exit 2 (usage) prints nothing on stdout.
const failureMediaType = "application/vnd.openadapt-agent.failure+json;version=1"

// Failure codes of the failure document. Each has one fixed message: the
// document never carries paths, names or library text (those stay on
// stderr), so it is safe to hand to an agent or a log collector.
const (
	codeFailed            = "failed"
	codeCheckFailed       = "check_failed"
	codeInterrupted       = "interrupted"
	codeOperandMissing    = "operand_missing"
	codeOperandNotRegular = "operand_not_regular"
	codeOperandUnreadable = "operand_unreadable"
	codeDigestMismatch    = "digest_mismatch"
	codeUnsafeArchive     = "unsafe_archive"
	codeInvalidSkill      = "invalid_skill"
	codeConflict          = "conflict"
	codeBundleRefused     = "bundle_refused"
	codeFlowNotFound      = "flow_not_found"
	codeFlowFailed        = "flow_failed"
	codeSignatureInvalid  = "signature_invalid"
	codeInputInvalid      = "input_invalid"
	codeNotInstalled      = "not_installed"
	codeNotConfirmed      = "not_confirmed"
	codeUnsafePath        = "unsafe_path"
)

// failureMessages holds the fixed message of every failure code.
var failureMessages = map[string]string{
	codeFailed:            "The command failed; stderr says why.",
	codeCheckFailed:       "A check failed; stderr says which.",
	codeInterrupted:       "The command was interrupted before it finished.",
	codeOperandMissing:    "An operand does not exist.",
	codeOperandNotRegular: "An operand is not a file or folder of the kind this command reads.",
	codeOperandUnreadable: "An operand cannot be read.",
	codeDigestMismatch:    "A digest does not match the expected value.",
	codeUnsafeArchive:     "The archive is unsafe or malformed.",
	codeInvalidSkill:      "The skill does not pass the Agent Skills rules.",
	codeConflict:          "A different item already exists at the destination.",
	codeBundleRefused:     "The workflow bundle was refused.",
	codeFlowNotFound:      "The openadapt-flow command was not found.",
	codeFlowFailed:        "openadapt-flow failed.",
	codeSignatureInvalid:  "The Sigstore signature did not verify.",
	codeInputInvalid:      "An input could not be used.",
	codeNotInstalled:      "No installed skill matches.",
	codeNotConfirmed:      "The removal was not confirmed; nothing was removed.",
	codeUnsafePath:        "A path goes through a symbolic link or is not a regular file or folder; nothing was changed.",
}

// codedErr gives an error an explicit failure code. Its exit code is that of
// the wrapped error.
type codedErr struct {
	code string
	err  error
}

func (e *codedErr) Error() string { return e.err.Error() }
func (e *codedErr) Unwrap() error { return e.err }

// withCode attaches a failure code to err.
func withCode(code string, err error) error {
	if err == nil {
		return nil
	}
	return &codedErr{code: code, err: err}
}

// failureCode picks the failure code of an error that exits 1.
func failureCode(err error) string {
	var c *codedErr
	switch {
	case errors.As(err, &c):
		return c.code
	case errors.Is(err, errCheckFailed):
		return codeCheckFailed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return codeInterrupted
	case errors.Is(err, skill.ErrPath):
		return codeOperandUnreadable
	case errors.Is(err, skill.ErrDigestMismatch):
		return codeDigestMismatch
	case errors.Is(err, skill.ErrUnsafeArchive):
		return codeUnsafeArchive
	case errors.Is(err, skill.ErrInvalid):
		return codeInvalidSkill
	case errors.Is(err, skill.ErrConflict):
		return codeConflict
	case errors.Is(err, skill.ErrNotInstalled):
		return codeNotInstalled
	case errors.Is(err, skill.ErrNotConfirmed):
		return codeNotConfirmed
	case errors.Is(err, skill.ErrUnsafePath):
		return codeUnsafePath
	case errors.Is(err, skill.ErrBundle):
		return codeBundleRefused
	case errors.Is(err, flowrun.ErrFlowNotFound):
		return codeFlowNotFound
	case errors.Is(err, skill.ErrFlow):
		return codeFlowFailed
	case errors.Is(err, ledger.ErrSigstoreVerification):
		return codeSignatureInvalid
	case errors.Is(err, ledger.ErrInput):
		return codeInputInvalid
	}
	return codeFailed
}

// failureDoc is the failure document.
type failureDoc struct {
	MediaType string       `json:"mediaType"`
	Command   string       `json:"command"`
	ExitCode  int          `json:"exit_code"`
	Error     failureError `json:"error"`
}

type failureError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newFailureDoc(c *cobra.Command, err error) failureDoc {
	code := failureCode(err)
	return failureDoc{
		MediaType: failureMediaType,
		Command:   commandName(c),
		ExitCode:  exitFailed,
		Error:     failureError{Code: code, Message: failureMessages[code]},
	}
}

// commandName is the command path without the program name: "skill verify".
func commandName(c *cobra.Command) string {
	if c == nil || !c.HasParent() {
		return ""
	}
	p := c.CommandPath()
	if r := c.Root(); r != nil {
		p = p[len(r.Name()):]
		if len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
	}
	return p
}

// jsonRequested reports whether c was run with --json.
func jsonRequested(c *cobra.Command) bool {
	if c == nil {
		return false
	}
	f := c.Flags().Lookup("json")
	return f != nil && f.Value.String() == "true"
}

// countingWriter counts the bytes written through it, so [run] knows whether
// a command already printed its document.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// operandError classifies a path operand that cannot be used: missing, not of
// the kind wanted, or unreadable. It exits 1 with a failure code (a bad
// operand is a failed result, not a usage error). It returns nil when the path
// is usable as far as a stat can tell.
func operandError(path string, wantDir, wantFile bool) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return withCode(codeOperandMissing, fmt.Errorf("%s does not exist", displayPath(path)))
	case errors.Is(err, fs.ErrPermission):
		return withCode(codeOperandUnreadable, fmt.Errorf("%s cannot be read (permission denied)", displayPath(path)))
	case err != nil:
		return withCode(codeOperandUnreadable, fmt.Errorf("%s cannot be read", displayPath(path)))
	case wantDir && wantFile:
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			return withCode(codeOperandNotRegular, fmt.Errorf("%s is neither a regular file nor a folder", displayPath(path)))
		}
	case wantDir && !fi.IsDir():
		return withCode(codeOperandNotRegular, fmt.Errorf("%s is not a folder", displayPath(path)))
	case wantFile && !fi.Mode().IsRegular():
		return withCode(codeOperandNotRegular, fmt.Errorf("%s is not a regular file", displayPath(path)))
	}
	return nil
}
