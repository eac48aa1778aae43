package flowrun

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers use errors.Is at any granularity. No error text of
// this package carries a parameter value, a report body or Flow output; paths
// may appear in wrapped OS errors, so callers treat the text as protected
// detail and never put it on the wire.
var (
	// ErrInvalid is the root of every input error.
	ErrInvalid = errors.New("invalid input")
	// ErrCommandSyntax: a command string has an unterminated quote or a
	// trailing backslash ([SplitCommand]).
	ErrCommandSyntax = fmt.Errorf("%w: command syntax", ErrInvalid)
	// ErrEmptyCommand: a command string or argv holds no word.
	ErrEmptyCommand = fmt.Errorf("%w: empty command", ErrInvalid)
	// ErrInvalidRequest: a [Request] misses a required field or has a
	// malformed one (run id, relative paths).
	ErrInvalidRequest = fmt.Errorf("%w: run request", ErrInvalid)

	// ErrReport is the root of the report-reading errors of [ReadReport].
	ErrReport = errors.New("report unusable")
	// ErrUnsafePath: the run directory or report.json is a symlink, not the
	// expected file type, or resolves outside the runs root.
	ErrUnsafePath = fmt.Errorf("%w: unsafe path", ErrReport)
	// ErrReportTooLarge: report.json exceeds [MaxReportSize].
	ErrReportTooLarge = fmt.Errorf("%w: too large", ErrReport)
	// ErrReportSyntax: report.json is not valid JSON.
	ErrReportSyntax = fmt.Errorf("%w: invalid JSON", ErrReport)

	// ErrSpawn: the Flow process could not be started (after the run id was
	// reserved, so the run result is status error).
	ErrSpawn = errors.New("flow process could not be started")
	// ErrParamsFile: the parameters file could not be written.
	ErrParamsFile = errors.New("parameters file could not be written")
)
