package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listingOf is everything the read tools show of each workflow, in order.
func listingOf(s *session) string {
	var b strings.Builder
	for _, w := range s.srv.catalog.cat.workflows {
		sv := -1
		if w.schemaVersion != nil {
			sv = *w.schemaVersion
		}
		fmt.Fprintf(&b, "%s %s available=%v reason=%s params=%+v steps=%d schema=%d digest=%s encrypted=%v\n",
			filepath.Base(w.dir), w.id, w.available, w.reason, w.params, w.stepCount, sv, w.contentDigest, w.encrypted)
	}
	return b.String()
}

// dotIdent is the identity hash of a folder's own entry alone: what an
// entry whose file list is just "." must match.
func dotIdent(t *testing.T, dir string) string {
	t.Helper()
	h, id, ok := openRootDir(dir)
	if !ok {
		t.Fatal("openRootDir")
	}
	h.close()
	ih := newIdentHash()
	ih.add(".", id)
	return ih.hex()
}

// TestCacheForgedEntries: whatever stands in the cache file, the listing
// equals the one full verification gives without a cache. An entry only
// counts when this user's server wrote it (HMAC under the key in the
// private state folder) for this root, and its folder is unchanged since.
// Before, an entry listing only "." with that folder's identity made a
// folder that is not a bundle available with invented parameters.
func TestCacheForgedEntries(t *testing.T) {
	e := newEnv(t)
	copyVector(t, "plain/mockmed-triage-v3", filepath.Join(e.bundles, "a-good"))
	copyVector(t, "tampered/template-byte-flipped", filepath.Join(e.bundles, "b-flipped"))
	notBundle := filepath.Join(e.bundles, "c-not-a-bundle")
	os.MkdirAll(notBundle, 0o755)
	os.WriteFile(filepath.Join(notBundle, "workflow.json"), []byte(`{"not":"a bundle"}`), 0o644)
	setRacyWindow(t, 0)
	o := e.opts()
	o.CacheDir = "off"
	uncached := listingOf(start(t, o))
	if !strings.Contains(uncached, "a-good") || !strings.Contains(uncached, "c-not-a-bundle") || strings.Count(uncached, "available=true") != 1 {
		t.Fatalf("unexpected uncached listing:\n%s", uncached)
	}
	o.CacheDir = filepath.Join(e.root, "cache")
	if got := listingOf(start(t, o)); got != uncached {
		t.Fatalf("first cached start:\n%s\nwant\n%s", got, uncached)
	}
	loads := countLoads(t)
	if got := listingOf(start(t, o)); got != uncached || loads.Load() != 0 {
		t.Fatalf("warm start (%d loads):\n%s", loads.Load(), got)
	}
	cachePath := (&bundleLoader{cacheDir: o.CacheDir}).cachePath(e.bundles)
	stored, err := os.ReadFile(cachePath)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(os.Getenv("XDG_STATE_HOME"), "openadapt-agent", cacheKeyName))
	if err != nil || len(key) != 32 {
		t.Fatalf("key: %v", err)
	}
	body, ok := openCache(key, stored)
	if !ok {
		t.Fatal("the stored cache does not authenticate")
	}
	var authentic cacheFile
	if !decodeCache(body, &authentic) || len(authentic.Bundles) != 3 {
		t.Fatalf("stored cache: %s", body)
	}
	// The forgery of the report: an entry that lists only the folder itself,
	// with the folder's real identity, available, with invented parameters.
	forged := cachedBundle{Dir: notBundle, Files: ".", Ident: dotIdent(t, notBundle),
		BaseID: "workflow_0123456789abcdef01234567", Available: true,
		Params: []string{"invented"}, ParamTypes: []string{"string"}, StepCount: 3}
	withForged := func(v int) []byte {
		c := cacheFile{V: v, Root: e.bundles, Bundles: []cachedBundle{authentic.Bundles[0], authentic.Bundles[1], forged}}
		data, _ := json.Marshal(c)
		return data
	}
	edited := func(edit func(*cachedBundle)) []byte {
		c := authentic
		c.Bundles = append([]cachedBundle(nil), authentic.Bundles...)
		for i := range c.Bundles {
			edit(&c.Bundles[i])
		}
		data, _ := json.Marshal(c)
		return append(append([]byte(nil), stored[:2*32+1]...), data...) // the old MAC
	}
	otherKey := bytes.Repeat([]byte{7}, 32)
	otherRoot := func() []byte {
		c := authentic
		c.Root = filepath.Join(e.root, "other-root")
		data, _ := json.Marshal(c)
		return sealCache(key, data) // authentic, but for another root
	}
	for name, data := range map[string][]byte{
		"unauthenticated, the old format":   withForged(4),
		"unauthenticated":                   withForged(cacheVersion),
		"another key's MAC":                 sealCache(otherKey, withForged(cacheVersion)),
		"the authentic MAC, an added entry": append(append([]byte(nil), stored[:2*32+1]...), withForged(cacheVersion)...),
		"available flipped":                 edited(func(cb *cachedBundle) { cb.Available, cb.Reason = true, "" }),
		"parameters changed": edited(func(cb *cachedBundle) {
			cb.Params = append(cb.Params, "extra")
			cb.ParamTypes = append(cb.ParamTypes, "string")
		}),
		"file list cut to the folder":   edited(func(cb *cachedBundle) { cb.Files, cb.Ident = ".", dotIdent(t, cb.Dir) }),
		"another root's authentic file": otherRoot(),
		"MAC of another body":           append(append([]byte(nil), stored[:2*32+1]...), withForged(cacheVersion)[:len(body)/2]...),
		"garbage":                       []byte("not a cache"),
		"empty":                         {},
		"MAC only":                      stored[:2*32+1],
		"upper-case MAC":                append([]byte(strings.ToUpper(string(stored[:2*32]))), stored[2*32:]...),
		"authentic file, a byte of JSON flipped": func() []byte {
			d := append([]byte(nil), stored...)
			i := bytes.Index(d, []byte(`"available":false`))
			copy(d[i:], `"available":true,`)
			return d
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(cachePath, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := listingOf(start(t, o)); got != uncached {
				t.Fatalf("listing with a forged cache:\n%s\nwant\n%s", got, uncached)
			}
		})
	}
	// Even an authenticated entry counts only for the folder whose identity
	// it recorded: entries moved to other folders are verified again.
	t.Run("authentic entries moved to other folders", func(t *testing.T) {
		c := authentic
		c.Bundles = append([]cachedBundle(nil), authentic.Bundles...)
		c.Bundles[0].Dir, c.Bundles[2].Dir = c.Bundles[2].Dir, c.Bundles[0].Dir
		data, _ := json.Marshal(c)
		os.WriteFile(cachePath, sealCache(key, data), 0o600)
		if got := listingOf(start(t, o)); got != uncached {
			t.Fatalf("listing:\n%s", got)
		}
	})
	// An authentic file replayed after a bundle changed: the changed folder
	// is verified again.
	t.Run("authentic file replayed after a change", func(t *testing.T) {
		os.WriteFile(cachePath, stored, 0o600)
		os.WriteFile(filepath.Join(e.bundles, "a-good", "workflow.json"), []byte(`{}`), 0o644)
		o2 := o
		o2.CacheDir = "off"
		now := listingOf(start(t, o2))
		if now == uncached {
			t.Fatal("the change did not change the listing")
		}
		os.WriteFile(cachePath, stored, 0o600)
		if got := listingOf(start(t, o)); got != now {
			t.Fatalf("listing:\n%s\nwant\n%s", got, now)
		}
	})
}
