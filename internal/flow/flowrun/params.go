package flowrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ParamsFileName returns the parameters file name of a run:
// "params-<run_id>.json".
func ParamsFileName(runID string) string { return "params-" + runID + ".json" }

// writeParamsFile creates dir/params-<runID>.json exclusively with mode 0600
// and writes one JSON object mapping each parameter name to its string value
// (docs/runs.md, "Parameters file"). Values never go anywhere else: not in
// argv, not in error text. An existing file is an error (exclusive
// creation); a partially written file is removed. It is not fsynced: Flow
// reads it through the page cache, and it is deleted when the run ends, so
// durability would only cost time (a crash loses the run anyway).
//
// Errors wrap [ErrParamsFile]; with a malformed runID, [ErrInvalidRequest].
func writeParamsFile(dir, runID string, params map[string]string) (path string, err error) {
	if !ValidRunID(runID) {
		return "", fmt.Errorf("%w: malformed run id", ErrInvalidRequest)
	}
	if params == nil {
		params = map[string]string{}
	}
	// encoding/json sorts map keys and emits strict UTF-8 JSON; Flow reads
	// it with json.loads, so HTML escaping of <>& is harmless.
	data, err := json.Marshal(params)
	if err != nil {
		return "", fmt.Errorf("%w: encoding", ErrParamsFile)
	}
	path = filepath.Join(dir, ParamsFileName(runID))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrParamsFile, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%w: %w", ErrParamsFile, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
			path = ""
		}
	}()
	// The umask cannot widen 0600, but an inherited ACL default could; pin it.
	if err := f.Chmod(0o600); err != nil {
		return path, fmt.Errorf("%w: %w", ErrParamsFile, err)
	}
	if _, err := f.Write(data); err != nil {
		return path, fmt.Errorf("%w: %w", ErrParamsFile, err)
	}
	return path, nil
}

// RemoveParamsFile deletes a parameters file, ignoring a missing one. Call
// it after the child has exited or been killed, whatever happened.
func RemoveParamsFile(path string) error {
	if path == "" {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: removing: %w", ErrParamsFile, err)
	}
	return nil
}

// SweepParamsFiles deletes every orphaned parameters file
// (params-run-<hex>.json) in dir and returns how many it removed (a step
// of serve's startup, docs/mcp.md "Startup"). Other names are left alone.
// A missing dir is not an error.
//
// Only call it when no run of any server sharing dir can be in flight for
// these files: serve calls it at startup after reconciling dead owners, and
// skips files whose run record is still running.
func SweepParamsFiles(dir string, keep func(runID string) bool) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: sweeping: %w", ErrParamsFile, err)
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "params-") || !strings.HasSuffix(name, ".json") {
			continue
		}
		runID := strings.TrimSuffix(strings.TrimPrefix(name, "params-"), ".json")
		if !ValidRunID(runID) || (keep != nil && keep(runID)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err == nil {
			n++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return n, fmt.Errorf("%w: sweeping: %w", ErrParamsFile, err)
		}
	}
	return n, nil
}
