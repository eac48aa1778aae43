package bundle

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
)

// readSized and hashSized read what is there, at most the stat'ed size plus
// one byte (growth is noticed, never read without bound), across buffer
// boundaries and for empty files.
func TestSizedReads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := newLoader(&config{}, newLimiter(1))
	bufLen := len(l.buf)
	for _, n := range []int{0, 1, 100, bufLen - 1, bufLen, bufLen + 1, 3 * bufLen} {
		data := bytes.Repeat([]byte{'x'}, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, size := range []int64{int64(n), int64(n) - 1, int64(n) + 5} { // as stat'ed, grown since, shrunk since
			if size < 0 {
				continue
			}
			f, _ := os.Open(p)
			got, err := readSized(f, size)
			f.Close()
			want := data[:min(int64(n), size+1)]
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("readSized(len %d, size %d) = %d bytes, %v; want %d", n, size, len(got), err, len(want))
			}
			f, _ = os.Open(p)
			h := sha256.New()
			total, err := l.hashSized(h, f, size)
			f.Close()
			if err != nil || total != int64(len(want)) || !bytes.Equal(h.Sum(nil), sha(want)) {
				t.Errorf("hashSized(len %d, size %d) = %d, %v; want %d bytes hashed", n, size, total, err, len(want))
			}
		}
	}
}

func sha(b []byte) []byte { s := sha256.Sum256(b); return s[:] }
