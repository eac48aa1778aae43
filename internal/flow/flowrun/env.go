package flowrun

import (
	"runtime"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// allowExact is the exact-name class of the child environment allowlist
// (docs/runs.md, "Child environment").
var allowExact = []string{
	"PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "TZ", "LANG", "LANGUAGE",
	"DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DBUS_SESSION_BUS_ADDRESS",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS", "PLAYWRIGHT_BROWSERS_PATH",
}

// allowWindows is the "Windows basics" class, matched case-insensitively on
// Windows only.
var allowWindows = []string{
	"SYSTEMROOT", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "USERNAME", "APPDATA",
	"LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)", "HOMEDRIVE",
	"HOMEPATH", "COMPUTERNAME", "NUMBER_OF_PROCESSORS", "PROCESSOR_ARCHITECTURE", "OS",
}

// allowPrefixes is the prefix class. OPENADAPT_ carries OPENADAPT_BUNDLE_KEY,
// OPENADAPT_FLOW_SECRET_<PARAM> and OPENADAPT_DURABLE_AUTHORITY_DB.
var allowPrefixes = []string{"LC_", "XDG_", "OPENADAPT_"}

var passEnvName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// MaxPassEnv is the largest number of --pass-env names.
const MaxPassEnv = 32

// ValidPassEnvName reports whether name is acceptable to --pass-env:
// ^[A-Za-z_][A-Za-z0-9_]{0,127}$.
func ValidPassEnvName(name string) bool { return passEnvName().MatchString(name) }

// ChildEnv returns the explicit environment of a Flow child process
// (docs/runs.md, "Child environment") from the server's environment (os.Environ() form,
// "NAME=value"): the exact names, on Windows also the Windows basics (case
// insensitive there), every name starting with LC_, XDG_ or OPENADAPT_, and
// each passEnv name that is set. Anything else is dropped: credentials,
// proxies, PYTHONPATH, LD_PRELOAD, NODE_OPTIONS, VIRTUAL_ENV, ….
//
// The result keeps the order of environ, never repeats a name (the last
// occurrence wins, as for os.Getenv) and is never nil, because a nil
// exec.Cmd.Env would mean "inherit everything". Invalid passEnv names are
// ignored; callers validate them with [ValidPassEnvName] at startup.
func ChildEnv(environ []string, passEnv []string) []string {
	return childEnv(environ, passEnv, runtime.GOOS == "windows")
}

func childEnv(environ, passEnv []string, windows bool) []string {
	fold := func(s string) string {
		if windows {
			return strings.ToUpper(s)
		}
		return s
	}
	allowed := map[string]bool{}
	for _, n := range allowExact {
		allowed[fold(n)] = true
	}
	if windows {
		for _, n := range allowWindows {
			allowed[n] = true
		}
	}
	for _, n := range passEnv {
		if ValidPassEnvName(n) {
			allowed[fold(n)] = true
		}
	}
	keep := func(name string) bool {
		k := fold(name)
		if allowed[k] {
			return true
		}
		for _, p := range allowPrefixes {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	// Last occurrence wins; keep the position of the first.
	last := map[string]int{}
	for i, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		last[fold(name)] = i
	}
	out := make([]string, 0, len(last))
	seen := map[string]bool{}
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || !keep(name) || seen[fold(name)] {
			continue
		}
		seen[fold(name)] = true
		out = append(out, environ[last[fold(name)]])
	}
	return out
}

// EnvValue returns the value of name in env ("NAME=value" entries, the form
// of os.Environ and [ChildEnv]), or "" when it is absent. The last entry
// wins, as in [ChildEnv]; names are compared case-insensitively on Windows,
// as there.
func EnvValue(env []string, name string) string {
	return envValue(env, name, runtime.GOOS == "windows")
}

func envValue(env []string, name string, windows bool) string {
	v := ""
	for _, kv := range env {
		k, val, ok := strings.Cut(kv, "=")
		if ok && k != "" && (k == name || windows && strings.EqualFold(k, name)) {
			v = val
		}
	}
	return v
}

// EnvWithout returns a copy of env without any entry for name (compared as
// in [EnvValue]); never nil.
func EnvWithout(env []string, name string) []string {
	return envWithout(env, name, runtime.GOOS == "windows")
}

func envWithout(env []string, name string, windows bool) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == name || windows && strings.EqualFold(k, name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
