// Package userdirs resolves the per-user folders openadapt-agent keeps
// state and caches in, so that no command depends on the folder it is
// started in (an MCP client may start serve in / or any unwritable folder).
//
// State (run records, Flow run folders) lives in the per-user state folder:
// $XDG_STATE_HOME or ~/.local/state on Linux and other Unix systems,
// ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows. The
// verified-digest cache lives in the user cache folder ($XDG_CACHE_HOME or
// ~/.cache on Linux; see [os.UserCacheDir]). Both get an openadapt-agent
// subfolder.
package userdirs

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// App is the subfolder name under the per-user folders.
const App = "openadapt-agent"

// ErrNoHome is returned when no per-user folder can be determined.
var ErrNoHome = errors.New("no per-user state folder: set HOME (or XDG_STATE_HOME / LOCALAPPDATA)")

// StateDir returns <per-user state folder>/openadapt-agent.
func StateDir() (string, error) {
	return stateDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

// RunsDir returns serve's default --runs-dir: <StateDir>/runs.
func RunsDir() (string, error) {
	d, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "runs"), nil
}

// CacheDir returns <user cache folder>/openadapt-agent.
func CacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, App), nil
}

func stateDir(goos string, getenv func(string) string, home func() (string, error)) (string, error) {
	switch goos {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, App), nil
		}
		return "", ErrNoHome
	case "darwin", "ios":
		h, err := home()
		if err != nil || h == "" {
			return "", ErrNoHome
		}
		return filepath.Join(h, "Library", "Application Support", App), nil
	default:
		// XDG Base Directory: a relative value is invalid and ignored.
		if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, App), nil
		}
		h, err := home()
		if err != nil || h == "" {
			return "", ErrNoHome
		}
		return filepath.Join(h, ".local", "state", App), nil
	}
}
