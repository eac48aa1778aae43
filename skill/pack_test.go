package skill

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// copyFixture copies src into dst with normalized permissions (0644 files,
// 0755 executables and dirs), independent of the checkout's umask.
func copyFixture(t testing.TB, src, dst string) {
	t.Helper()
	testutil.CopyTree(t, src, dst, func(rel string, data []byte, mode fs.FileMode) (string, []byte, fs.FileMode) {
		if mode&0o111 != 0 {
			return rel, data, 0o755
		}
		return rel, data, 0o644
	})
}

// packFixture copies testdata/skill/pack/demo-pack into a temp folder and
// adds the files pack must skip.
func packFixture(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo-pack")
	copyFixture(t, filepath.Join("..", "testdata", "skill", "pack", "demo-pack"), dir)
	os.WriteFile(filepath.Join(dir, ".DS_Store"), []byte("junk"), 0o644)
	os.WriteFile(filepath.Join(dir, SumsFile), []byte("stale\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git", "objects"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "scripts", "__pycache__"), 0o755)
	os.WriteFile(filepath.Join(dir, "scripts", "__pycache__", "x.pyc"), []byte("pyc"), 0o644)
	return dir
}

func packBytes(t testing.TB, dir string, f Format, conc int) ([]byte, *PackResult) {
	t.Helper()
	var buf bytes.Buffer
	var warns []string
	res, err := Pack(dir, &buf, PackOptions{Format: f, Concurrency: conc, Warn: func(m string) { warns = append(warns, m) }})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// The golden hashes pin both formats. They depend on klauspost/compress
// v1.18.6 (zstd) and on Go's compress/flate (zip): regenerate with
// `go test ./skill -update` after a deliberate bump and say so in the PR.
func TestPackGoldenHashes(t *testing.T) {
	dir := packFixture(t)
	var b strings.Builder
	for _, f := range []Format{FormatTarZst, FormatZip} {
		_, res := packBytes(t, dir, f, 0)
		fmt.Fprintf(&b, "%s sha256:%s %s files=%d\n", f, res.SHA256, res.TreeDigest, res.Files)
	}
	testutil.Golden(t, filepath.Join("..", "testdata", "skill", "pack", "golden.txt"), []byte(b.String()))
}

func TestPackDeterministic(t *testing.T) {
	for _, f := range []Format{FormatTarZst, FormatZip} {
		t.Run(string(f), func(t *testing.T) {
			dir := packFixture(t)
			want, _ := packBytes(t, dir, f, 1)
			// Concurrency never changes the bytes.
			if got, _ := packBytes(t, dir, f, 4); !bytes.Equal(want, got) {
				t.Error("concurrency 4 differs from concurrency 1")
			}
			// Neither do times nor group/other permission bits.
			future := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
			filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
				os.Chtimes(p, future, future)
				if !d.IsDir() && !strings.HasSuffix(p, "run.sh") {
					os.Chmod(p, 0o600)
				}
				return nil
			})
			if got, _ := packBytes(t, dir, f, 2); !bytes.Equal(want, got) {
				t.Error("bytes changed after chtimes and chmod 0600")
			}
		})
	}
}

type member struct {
	Name string
	Mode fs.FileMode
	Dir  bool
}

func TestPackTarZstLayout(t *testing.T) {
	dir := packFixture(t)
	data, res := packBytes(t, dir, FormatTarZst, 0)
	zr, err := zstd.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var got []member
	var sums []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(Epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: header not normalized: %+v", h.Name, h)
		}
		got = append(got, member{h.Name, fs.FileMode(h.Mode), h.Typeflag == tar.TypeDir})
		if h.Name == "demo-pack/SHA256SUMS" {
			sums, _ = io.ReadAll(tr)
		}
	}
	want := []member{
		{"demo-pack/", 0o755, true},
		{"demo-pack/SKILL.md", 0o644, false},
		{"demo-pack/a-b/", 0o755, true},
		{"demo-pack/a-b/x.txt", 0o644, false},
		{"demo-pack/bundle/", 0o755, true},
		{"demo-pack/bundle/templates/", 0o755, true},
		{"demo-pack/bundle/templates/nested/", 0o755, true},
		{"demo-pack/bundle/templates/nested/deep.txt", 0o644, false},
		{"demo-pack/bundle/templates/step_000.png", 0o644, false},
		{"demo-pack/bundle/workflow.json", 0o644, false},
		{"demo-pack/scripts/", 0o755, true},
		{"demo-pack/scripts/run.sh", 0o755, false},
		{"demo-pack/SHA256SUMS", 0o644, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if res.TreeDigest != TreeDigest(sums) || res.Files != 7 {
		t.Errorf("tree digest %s / files %d do not match the archive", res.TreeDigest, res.Files)
	}
	lines := strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n")
	if len(lines) != 6 || !strings.HasSuffix(lines[0], "  SKILL.md") || !strings.HasSuffix(lines[5], "  scripts/run.sh") {
		t.Errorf("SHA256SUMS:\n%s", sums)
	}
}

func TestPackZipLayout(t *testing.T) {
	dir := packFixture(t)
	data, _ := packBytes(t, dir, FormatZip, 0)
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var got []member
	for _, f := range zr.File {
		if !f.Modified.UTC().Equal(Epoch) || f.Method != zip.Deflate {
			t.Errorf("%s: modified %v method %d", f.Name, f.Modified, f.Method)
		}
		got = append(got, member{f.Name, f.Mode().Perm(), f.Mode().IsDir()})
	}
	want := []member{
		{"demo-pack/SKILL.md", 0o644, false},
		{"demo-pack/a-b/x.txt", 0o644, false},
		{"demo-pack/bundle/templates/nested/deep.txt", 0o644, false},
		{"demo-pack/bundle/templates/step_000.png", 0o644, false},
		{"demo-pack/bundle/workflow.json", 0o644, false},
		{"demo-pack/scripts/run.sh", 0o755, false},
		{"demo-pack/SHA256SUMS", 0o644, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

func TestPackRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  error
		msg   string
	}{
		{"symlink", func(t *testing.T, dir string) { os.Symlink("SKILL.md", filepath.Join(dir, "link")) }, ErrUnsafeArchive, "symlink"},
		{"fifo", func(t *testing.T, dir string) {
			if err := mkfifo(filepath.Join(dir, "pipe")); err != nil {
				t.Skip(err)
			}
		}, ErrUnsafeArchive, "FIFO"},
		{"case collision", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a-b", "X.txt"), []byte("x"), 0o644)
		}, ErrUnsafeArchive, "collide"},
		{"backslash", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, `a\b`), []byte("x"), 0o644)
		}, ErrUnsafeArchive, "backslash"},
		{"control character", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "a\nb"), []byte("x"), 0o644)
		}, ErrUnsafeArchive, "control"},
		{"invalid skill", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: other\ndescription: d\n---\n"), 0o644)
		}, ErrName, "must match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := packFixture(t)
			tt.setup(t, dir)
			out := filepath.Join(t.TempDir(), "x.skill")
			_, err := PackFile(dir, out, PackOptions{})
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
			if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
				t.Errorf("a failed pack left files behind: %v", entries)
			}
		})
	}
}

func TestPackFile(t *testing.T) {
	dir := packFixture(t)
	out := filepath.Join(t.TempDir(), "demo.tar.zst")
	res, err := PackFile(dir, out, PackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	side, err := os.ReadFile(out + ".sha256")
	if err != nil {
		t.Fatal(err)
	}
	if want := res.SHA256 + "  demo.tar.zst\n"; string(side) != want {
		t.Errorf("sidecar = %q, want %q", side, want)
	}
	if _, err := FormatFor("x.tar.gz"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("FormatFor(.tar.gz) = %v", err)
	}
}

func BenchmarkPackTarZst(b *testing.B) {
	dir := packFixture(b)
	for b.Loop() {
		if _, err := Pack(dir, io.Discard, PackOptions{Format: FormatTarZst}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPackFileCanceled: canceling the context mid-pack (after the first
// file is packed) stops both formats with the context's error, and
// PackFile leaves neither the archive, its sidecar nor a temporary file.
func TestPackFileCanceled(t *testing.T) {
	for _, f := range []Format{FormatZip, FormatTarZst} {
		dir := packFixture(t)
		out := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		_, err := PackFile(dir, filepath.Join(out, "x.skill"), PackOptions{Format: f, Context: ctx, Progress: func(int, int, int64, int64) {
			calls++
			cancel()
		}})
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("%s: err = %v after %d files, want context.Canceled after 1", f, err, calls)
		}
		if ents, _ := os.ReadDir(out); len(ents) != 0 {
			t.Fatalf("%s: left %s", f, ents[0].Name())
		}
	}
}

// The bytes do not depend on the number of cores: a tree of several MB
// (many zstd blocks, half of it incompressible) packed with GOMAXPROCS=1
// and =2 and the default encoder concurrency gives the same archive.
func TestPackSameBytesAnyGOMAXPROCS(t *testing.T) {
	dir := packFixture(t)
	big := make([]byte, 6<<20)
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range big {
		if i%(1<<20) < 1<<19 {
			big[i] = byte(rng.Uint32())
		} else {
			big[i] = byte(i / 97)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for _, f := range []Format{FormatTarZst, FormatZip} {
		runtime.GOMAXPROCS(1)
		one, _ := packBytes(t, dir, f, 0)
		runtime.GOMAXPROCS(2)
		two, _ := packBytes(t, dir, f, 0)
		if !bytes.Equal(one, two) {
			t.Errorf("%s: GOMAXPROCS=1 and =2 give different archives (%d and %d bytes)", f, len(one), len(two))
		}
	}
}
