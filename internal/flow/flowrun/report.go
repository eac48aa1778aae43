package flowrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// MaxReportSize is the largest report.json the agent reads: a regular file
// per lstat, not a symlink, of at most 16 MiB.
const MaxReportSize = 16 << 20

// ReadReport reads <runsDir>/<runID>/report.json with these path safety
// rules (docs/runs.md, "Report status"):
//   - the runs root is a directory, not a symlink;
//   - <runsDir>/<runID> is a directory per lstat, not a symlink, whose
//     resolved path lies strictly inside the resolved root;
//   - report.json is a regular file per lstat (opened without following
//     symlinks and re-checked after opening) of at most [MaxReportSize] bytes
//     holding a JSON object.
//
// An absent run directory or report.json gives [ReportAbsent] and a nil
// error ("no report" for classification). Every other failure gives
// [ReportUnusable] and an error wrapping [ErrReport] ([ErrUnsafePath],
// [ErrReportTooLarge], [ErrReportSyntax]) or the OS error. runID must satisfy
// [ValidRunID] (else [ErrInvalidRequest]), so it can never name another path.
func ReadReport(runsDir, runID string) ([]byte, ReportState, error) {
	data, _, state, err := readReport(runsDir, runID)
	return data, state, err
}

// readReport is ReadReport that also returns the parsed top-level object.
func readReport(runsDir, runID string) ([]byte, *pyjson.Doc, ReportState, error) {
	if !ValidRunID(runID) {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: malformed run id", ErrInvalidRequest)
	}
	fi, err := os.Lstat(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ReportAbsent, nil
	}
	if err != nil {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: runs root: %w", ErrReport, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: runs root is not a plain directory", ErrUnsafePath)
	}
	runDir := filepath.Join(runsDir, runID)
	fi, err = os.Lstat(runDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ReportAbsent, nil
	}
	if err != nil {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: run directory: %w", ErrReport, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: run directory is not a plain directory", ErrUnsafePath)
	}
	if err := insideRoot(runsDir, runDir); err != nil {
		return nil, nil, ReportUnusable, err
	}
	data, err := readRegular(filepath.Join(runDir, "report.json"), reportLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, ReportAbsent, nil
	}
	if err != nil {
		return nil, nil, ReportUnusable, err
	}
	obj, ok := ParseObject(data)
	if !ok {
		return nil, nil, ReportUnusable, fmt.Errorf("%w: not a JSON object", ErrReportSyntax)
	}
	return data, obj, ReportPresent, nil
}

// insideRoot checks that dir resolves strictly inside root.
func insideRoot(root, dir string) error {
	rr, err := filepath.EvalSymlinks(root)
	if err != nil {
		return fmt.Errorf("%w: resolving runs root: %w", ErrReport, err)
	}
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("%w: resolving run directory: %w", ErrReport, err)
	}
	rel, err := filepath.Rel(rr, rd)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%w: run directory outside the runs root", ErrUnsafePath)
	}
	return nil
}

// reportLimit is report.json's cap (fsutil.Report, the README's table).
var reportLimit = fsutil.Limit{Kind: fsutil.Report.Kind, Max: MaxReportSize}

// readRegular reads a regular, non-symlink file of at most limit bytes
// through the project's one bounded read (internal/util/fsutil: no-follow,
// non-blocking open, the type and size checked on the opened descriptor). A
// missing file gives an error wrapping fs.ErrNotExist.
func readRegular(path string, limit fsutil.Limit) ([]byte, error) {
	data, err := fsutil.ReadFile(context.Background(), path, limit, fsutil.NoFollow)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, fsutil.ErrSymlink), errors.Is(err, fsutil.ErrNotRegular):
		return nil, fmt.Errorf("%w: report.json is not a regular file", ErrUnsafePath)
	case errors.Is(err, fsutil.ErrTooLarge):
		return nil, ErrReportTooLarge
	}
	return nil, fmt.Errorf("%w: %w", ErrReport, err)
}
