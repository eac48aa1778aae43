package bundle

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/cputime"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// BenchmarkLoadPlainVector: full verification of one real Flow bundle
// (plain/mockmed-triage-v3: 6 steps, 10 PNG templates).
func BenchmarkLoadPlainVector(b *testing.B) {
	dir := filepath.Join(vectorsDir, "plain/mockmed-triage-v3")
	for b.Loop() {
		if bd, _ := Load(dir); bd.Integrity != Verified {
			b.Fatal(bd.Err)
		}
	}
}

// BenchmarkLoadSynthetic: full verification of one synthetic bundle with 10
// templates of 20 KiB (the per-bundle path of bench/bundle-verify.sh).
func BenchmarkLoadSynthetic(b *testing.B) {
	dir := b.TempDir()
	s := defaultSynth()
	s.Files = map[string][]byte{}
	for i := range 10 {
		data := make([]byte, 20*1024)
		for j := range data {
			data[j] = byte(i*31 + j*7)
		}
		s.Files[filepath.ToSlash(filepath.Join("templates", "t"+string(rune('a'+i))+".png"))] = data
	}
	s.write(b, dir)
	b.SetBytes(10 * 20 * 1024)
	for b.Loop() {
		if bd, _ := Load(dir); bd.Integrity != Verified {
			b.Fatal(bd.Err)
		}
	}
}

// BenchmarkDiscoverDir: Discover over BUNDLE_BENCH_DIR (e.g. the output of
// bench/genbundles), skipped when unset.
func BenchmarkDiscoverDir(b *testing.B) {
	dir := os.Getenv("BUNDLE_BENCH_DIR")
	if dir == "" {
		b.Skip("BUNDLE_BENCH_DIR not set")
	}
	for b.Loop() {
		if _, err := Discover(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCanonicalDigest: parse + content digest (with the schema-v2
// default removals, SHA-256 included) of a real workflow.json, with the worker's
// reused document and buffer. Target for mockmed: >= 300 MB/s, <= 50
// allocs/op. cpu-MB/s is the throughput by process CPU time, which a shared
// machine does not inflate.
func BenchmarkCanonicalDigest(b *testing.B) {
	for _, v := range []string{"mockmed-triage-v3", "program-subflows"} {
		b.Run(v, func(b *testing.B) {
			data, err := os.ReadFile(filepath.Join(vectorsDir, "plain", v, "workflow.json"))
			if err != nil {
				b.Fatal(err)
			}
			var d pyjson.Doc
			var buf []byte
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if err := parseObject(&d, data); err != nil {
					b.Fatal(err)
				}
				_, buf = contentDigest(&d, &d, d.Get(d.Get(d.Root(), "manifest"), "file_hashes"), buf)
			}
			ns := float64(cpuTime()-start) / float64(b.N)
			b.ReportMetric(ns, "cpu-ns/op")
			b.ReportMetric(float64(len(data))/ns*1e3, "cpu-MB/s")
		})
	}
}

func cpuTime() time.Duration { return cputime.Now() }
