package serve

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWarmNew is server construction over the bundles under
// SERVE_BENCH_BUNDLES (`go run ./bench/genbundles -out DIR`) with the digest
// cache a previous construction wrote: the warm start's in-process part
// (cache read, the per-file identity check of every bundle, tool
// registration). Skipped without the variable.
func BenchmarkWarmNew(b *testing.B) {
	dir := os.Getenv("SERVE_BENCH_BUNDLES")
	if dir == "" {
		b.Skip("SERVE_BENCH_BUNDLES not set")
	}
	tmp := b.TempDir()
	o := Options{Bundles: dir, RunsDir: filepath.Join(tmp, "runs"), CacheDir: filepath.Join(tmp, "cache"),
		Timeout: 600, RunWait: 40, AllowRun: true, AuditLog: "off", Environ: []string{}}
	s, err := New(o, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		s, err := New(o, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
