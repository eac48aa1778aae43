//go:build unix

package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheSharedOrForeignIgnored: a cache folder or file, or the key's
// folder or file, that another user could control is ignored, never
// refused: the server starts, verifies every bundle in full, lists what
// full verification gives, says once on stderr what it ignored and how
// to fix it, and changes nothing there. An authentic cache file planted
// through a hard link, another owner or a group write bit counts for
// nothing.
func TestCacheSharedOrForeignIgnored(t *testing.T) {
	setRacyWindow(t, 0)
	for name, tc := range map[string]struct {
		plant func(t *testing.T, cacheDir, cacheFile, stateDir string)
		path  func(cacheDir, cacheFile, stateDir string) string
		fix   string
	}{
		"cache folder writable by others": {
			plant: func(t *testing.T, d, f, s string) { os.Chmod(d, 0o777) },
			path:  func(d, f, s string) string { return d }, fix: "chmod go-w",
		},
		"cache folder readable by others": {
			plant: func(t *testing.T, d, f, s string) { os.Chmod(d, 0o755) },
			path:  func(d, f, s string) string { return d }, fix: "chmod 700",
		},
		"cache file with a second hard link": {
			plant: func(t *testing.T, d, f, s string) {
				if os.Link(f, filepath.Join(t.TempDir(), "elsewhere")) != nil {
					t.Skip("hard links")
				}
			},
			path: func(d, f, s string) string { return f }, fix: "break the link",
		},
		"cache file writable by others": {
			plant: func(t *testing.T, d, f, s string) { os.Chmod(f, 0o666) },
			path:  func(d, f, s string) string { return f }, fix: "chmod go-w",
		},
		"cache file of another user": {
			plant: func(t *testing.T, d, f, s string) {
				if os.Geteuid() != 0 || os.Chown(f, 4242, 4242) != nil {
					t.Skip("needs root")
				}
			},
			path: func(d, f, s string) string { return f }, fix: "move it aside",
		},
		"key folder writable by others": {
			plant: func(t *testing.T, d, f, s string) { os.Chmod(s, 0o777) },
			path:  func(d, f, s string) string { return s }, fix: "chmod go-w",
		},
		"key readable by others": {
			plant: func(t *testing.T, d, f, s string) { os.Chmod(filepath.Join(s, cacheKeyName), 0o644) },
			path:  func(d, f, s string) string { return filepath.Join(s, cacheKeyName) }, fix: "remove it",
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.demo("demo", testBundle{salt: "s1"})
			t.Setenv("XDG_STATE_HOME", filepath.Join(e.root, "state"))
			o := e.opts()
			start(t, o) // writes an authentic cache
			cacheFile := (&bundleLoader{cacheDir: o.CacheDir}).cachePath(e.bundles)
			stateDir := filepath.Join(e.root, "state", "openadapt-agent")
			if _, err := os.Stat(cacheFile); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, o.CacheDir, cacheFile, stateDir)
			before, _ := os.ReadFile(cacheFile)
			beforeFI, _ := os.Stat(cacheFile)
			loads := countLoads(t)
			stderr := &syncBuffer{}
			srv, err := New(o, stderr)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			srv.Close()
			if loads.Load() != 1 {
				t.Errorf("%d full verifications, want 1 (the cache ignored)", loads.Load())
			}
			p := tc.path(o.CacheDir, cacheFile, stateDir)
			msg := stderr.String()
			if strings.Count(msg, "digest cache is ignored") != 1 || !strings.Contains(msg, p) || !strings.Contains(msg, tc.fix) {
				t.Errorf("stderr %q: want one note naming %s and the fix %q", msg, p, tc.fix)
			}
			afterFI, _ := os.Stat(cacheFile)
			if after, err := os.ReadFile(cacheFile); err != nil || string(after) != string(before) || !os.SameFile(beforeFI, afterFI) {
				t.Error("an ignored cache file was changed or replaced")
			}
		})
	}
	// A plain start says nothing about the cache.
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "s2"})
	t.Setenv("XDG_STATE_HOME", filepath.Join(e.root, "state"))
	stderr := &syncBuffer{}
	for range 2 {
		srv, err := New(e.opts(), stderr)
		if err != nil {
			t.Fatal(err)
		}
		srv.Close()
	}
	if strings.Contains(stderr.String(), "cache") {
		t.Errorf("stderr %q", stderr.String())
	}
}
