package userdirs

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := func() (string, error) { return "/home/u", nil }
	noHome := func() (string, error) { return "", errors.New("no home") }
	for _, tc := range []struct {
		name, goos string
		env        map[string]string
		home       func() (string, error)
		want       string
		err        bool
	}{
		{"linux xdg", "linux", map[string]string{"XDG_STATE_HOME": "/x/state"}, home, "/x/state/openadapt-agent", false},
		{"linux relative xdg is ignored", "linux", map[string]string{"XDG_STATE_HOME": "rel"}, home, "/home/u/.local/state/openadapt-agent", false},
		{"linux home", "linux", nil, home, "/home/u/.local/state/openadapt-agent", false},
		{"linux no home", "linux", nil, noHome, "", true},
		{"freebsd home", "freebsd", nil, home, "/home/u/.local/state/openadapt-agent", false},
		{"macos", "darwin", map[string]string{"XDG_STATE_HOME": "/x/state"}, home, "/home/u/Library/Application Support/openadapt-agent", false},
		{"windows", "windows", map[string]string{"LOCALAPPDATA": "/c/Users/u/AppData/Local"}, home, "/c/Users/u/AppData/Local/openadapt-agent", false},
		{"windows none", "windows", nil, home, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stateDir(tc.goos, env(tc.env), tc.home)
			if (err != nil) != tc.err || filepath.ToSlash(got) != tc.want {
				t.Fatalf("stateDir = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestRunsAndCacheDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/s")
	t.Setenv("XDG_CACHE_HOME", "/c")
	t.Setenv("HOME", "/h")
	r, err := RunsDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	// On Linux (CI) the XDG variables decide; elsewhere the platform folders.
	if filepath.Base(r) != "runs" || filepath.Base(filepath.Dir(r)) != App || filepath.Base(c) != App {
		t.Fatalf("RunsDir %q CacheDir %q", r, c)
	}
}
