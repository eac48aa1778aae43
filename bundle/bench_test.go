package bundle

import (
	"os"
	"path/filepath"
	"testing"
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

// BenchmarkCanonicalDigest: parse + content digest of a real workflow.json.
func BenchmarkCanonicalDigest(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "plain/program-subflows/workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		top, err := parseObject(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = contentDigest(&top, &emptyObject)
	}
}
