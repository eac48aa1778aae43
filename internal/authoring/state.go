package authoring

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// UserStateDir is the per-user state directory of openadapt-agent
// (outside any runs folder): $XDG_STATE_HOME/openadapt-agent,
// else ~/.local/state/openadapt-agent; ~/Library/Application
// Support/openadapt-agent on macOS; %LOCALAPPDATA%\openadapt-agent on
// Windows. getenv is os.Getenv in production.
func UserStateDir(getenv func(string) string) (string, error) {
	switch runtime.GOOS {
	case "windows":
		if d := getenv("LOCALAPPDATA"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "openadapt-agent"), nil
		}
		return "", errors.New("LOCALAPPDATA is not set")
	case "darwin":
		if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
			return filepath.Join(h, "Library", "Application Support", "openadapt-agent"), nil
		}
	default:
		if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
			return filepath.Join(d, "openadapt-agent"), nil
		}
		if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
			return filepath.Join(h, ".local", "state", "openadapt-agent"), nil
		}
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return UserStateDir(func(k string) string {
			if k == "HOME" {
				return h
			}
			return ""
		})
	}
	return "", errors.New("no home directory for the per-user state directory")
}
