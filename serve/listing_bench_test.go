package serve

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// BenchmarkSealedListing is the per-bundle cost of listing sealed bundles
// at full verification: four copies of the sealed
// vector (Flow's own scrypt cost, N=2^15, r=8; workflow.json.enc plus 10
// templates: 11 key derivations per bundle, one at a time), cold (no
// cache) and warm (the cache under the same key: one key check per start).
// Report ns/op divided by 4 as the per-bundle figure.
func BenchmarkSealedListing(b *testing.B) {
	root := b.TempDir()
	bundles := filepath.Join(root, "bundles")
	for i := range 4 {
		if err := os.CopyFS(filepath.Join(bundles, fmt.Sprintf("s%d", i)), os.DirFS("../testdata/flow/sealed/mockmed-triage-v3")); err != nil {
			b.Fatal(err)
		}
	}
	opts := func(cache string) Options {
		return Options{Bundles: bundles, RunsDir: filepath.Join(root, "runs"), Timeout: 600, RunWait: 40, AuditLog: "off",
			CacheDir: cache, Environ: []string{bundle.KeyEnv + "=test-passphrase"}}
	}
	check := func(s *Server) {
		for _, w := range s.catalog.cat.workflows {
			if !w.available {
				b.Fatalf("sealed vector unavailable: %s", w.reason)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			s, err := New(opts("off"), io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			check(s)
			s.Close()
		}
	})
	b.Run("warm", func(b *testing.B) {
		setRacyWindow(b, 0)
		cache := filepath.Join(root, "cache")
		s, err := New(opts(cache), io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
		for b.Loop() {
			s, err := New(opts(cache), io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			check(s)
			s.Close()
		}
	})
}
