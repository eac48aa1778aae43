package skill

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// member of a hand-built archive.
type hm struct {
	name string
	body string
	typ  byte // tar typeflag (0 = regular)
	mode int64
	link string
}

const goodSkill = "---\nname: demo\ndescription: d\n---\n\n# Demo\n"

// sumsFor renders SHA256SUMS for name → body (paths under the top folder).
func sumsFor(files map[string]string) string {
	var rels []string
	for r := range files {
		rels = append(rels, r)
	}
	sort.Strings(rels)
	var b strings.Builder
	for _, r := range rels {
		s := sha256.Sum256([]byte(files[r]))
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(s[:]), r)
	}
	return b.String()
}

// goodMembers is a valid skill: demo/SKILL.md, demo/a.txt and SHA256SUMS.
func goodMembers() []hm {
	files := map[string]string{"SKILL.md": goodSkill, "a.txt": "hello\n"}
	return []hm{
		{name: "demo/", typ: tar.TypeDir},
		{name: "demo/SKILL.md", body: goodSkill},
		{name: "demo/a.txt", body: "hello\n"},
		{name: "demo/SHA256SUMS", body: sumsFor(files)},
	}
}

func buildTarZst(t testing.TB, members []hm) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Typeflag: m.typ, Mode: 0o644, Linkname: m.link, Format: tar.FormatPAX}
		if m.typ == 0 {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(m.body))
		}
		if m.mode != 0 {
			h.Mode = m.mode
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(m.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func buildZip(t testing.TB, members []hm, edit func(*zip.FileHeader)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		if m.typ == tar.TypeDir {
			continue
		}
		fh := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		fh.SetMode(0o644)
		if m.typ == tar.TypeSymlink {
			fh.SetMode(0o777 | os.ModeSymlink)
		}
		if edit != nil {
			edit(fh)
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(m.body))
	}
	zw.Close()
	return buf.Bytes()
}

func writeArchive(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerifyGood(t *testing.T) {
	for _, f := range []string{"demo.tar.zst", "demo.skill"} {
		var data []byte
		if strings.HasSuffix(f, ".zst") {
			data = buildTarZst(t, goodMembers())
		} else {
			data = buildZip(t, goodMembers(), nil)
		}
		p := writeArchive(t, f, data)
		res, err := VerifyArchive(p, VerifyOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if res.Name != "demo" || res.Files != 3 || res.DigestSource != "" {
			t.Errorf("%s: %+v", f, res)
		}
	}
}

func TestVerifyPacked(t *testing.T) {
	dir := packFixture(t)
	for _, name := range []string{"demo-pack.skill", "demo-pack.tar.zst"} {
		out := filepath.Join(t.TempDir(), name)
		pr, err := PackFile(dir, out, PackOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vr, err := VerifyArchive(out, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vr.SHA256 != pr.SHA256 || vr.TreeDigest != pr.TreeDigest || vr.Files != pr.Files || vr.DigestSource != "sidecar" {
			t.Errorf("verify %+v does not match pack %+v", vr, pr)
		}
		if _, err := VerifyArchive(out, VerifyOptions{SHA256: "sha256:" + pr.SHA256}); err != nil {
			t.Errorf("--sha256 sha256:<hex>: %v", err)
		}
		if _, err := VerifyArchive(out, VerifyOptions{SHA256: strings.Repeat("0", 64)}); !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("wrong --sha256: %v", err)
		}
		// A flipped byte breaks the sidecar digest.
		data, _ := os.ReadFile(out)
		data[len(data)/2] ^= 0xff
		os.WriteFile(out, data, 0o644)
		if _, err := VerifyArchive(out, VerifyOptions{}); !errors.Is(err, ErrDigestMismatch) {
			t.Errorf("flipped byte: %v", err)
		}
	}
}

func TestVerifyHostile(t *testing.T) {
	good := goodMembers()
	with := func(extra ...hm) []hm { return append(append([]hm{}, good...), extra...) }
	zeros := strings.Repeat("\x00", 8<<20)
	tests := []struct {
		name     string
		tar      []hm // built as .tar.zst
		zip      []byte
		limits   *Limits
		want     error
		contains string
	}{
		{name: "traversal", tar: with(hm{name: "demo/../x", body: "x"}), want: ErrUnsafeArchive, contains: "traversal"},
		{name: "absolute", tar: with(hm{name: "/etc/demo", body: "x"}), want: ErrUnsafeArchive, contains: "absolute"},
		{name: "drive letter", tar: with(hm{name: `C:\x`, body: "x"}), want: ErrUnsafeArchive, contains: "backslash"},
		{name: "drive letter slash", tar: with(hm{name: "C:/x", body: "x"}), want: ErrUnsafeArchive, contains: "drive letter"},
		{name: "outside top", tar: with(hm{name: "other/x", body: "x"}), want: ErrUnsafeArchive, contains: "outside the single top folder"},
		{name: "nul", tar: with(hm{name: "demo/a\x01b", body: "x"}), want: ErrUnsafeArchive, contains: "control"},
		{name: "symlink", tar: with(hm{name: "demo/l", typ: tar.TypeSymlink, link: "/etc/passwd"}), want: ErrUnsafeArchive, contains: "symlink"},
		{name: "hardlink", tar: with(hm{name: "demo/l", typ: tar.TypeLink, link: "demo/a.txt"}), want: ErrUnsafeArchive, contains: "hard link"},
		{name: "fifo", tar: with(hm{name: "demo/p", typ: tar.TypeFifo}), want: ErrUnsafeArchive, contains: "FIFO"},
		{name: "device", tar: with(hm{name: "demo/d", typ: tar.TypeChar}), want: ErrUnsafeArchive, contains: "device"},
		{name: "duplicate", tar: with(hm{name: "demo/a.txt", body: "again"}), want: ErrUnsafeArchive, contains: "duplicate"},
		{name: "case duplicate", tar: with(hm{name: "demo/A.TXT", body: "x"}), want: ErrUnsafeArchive, contains: "duplicate"},
		{name: "file is parent", tar: with(hm{name: "demo/a.txt/b", body: "x"}), want: ErrUnsafeArchive, contains: "parent is a file"},
		{name: "declared 2 GiB", tar: append([]hm{good[0], good[1]}, hm{name: "demo/big", typ: tar.TypeReg, body: ""}), limits: nil, want: nil},
		{name: "zstd bomb", tar: with(hm{name: "demo/zeros", body: zeros}), want: ErrUnsafeArchive, contains: "max-compression-ratio (1000:1)"},
		{name: "max entries", tar: good, limits: &Limits{MaxArchiveBytes: 1 << 20, MaxEntries: 3, MaxFileBytes: 1 << 20, MaxTotalUnpacked: 1 << 20, MaxRatio: 1000}, want: ErrUnsafeArchive, contains: "max-entries (3)"},
		{name: "max file", tar: good, limits: &Limits{MaxArchiveBytes: 1 << 20, MaxEntries: 10, MaxFileBytes: 10, MaxTotalUnpacked: 1 << 20, MaxRatio: 1000}, want: ErrUnsafeArchive, contains: "max-file-size (10 bytes)"},
		{name: "max total", tar: good, limits: &Limits{MaxArchiveBytes: 1 << 20, MaxEntries: 10, MaxFileBytes: 1 << 20, MaxTotalUnpacked: 50, MaxRatio: 1000}, want: ErrUnsafeArchive, contains: "max-total-unpacked (50 bytes)"},
		{name: "max archive", tar: good, limits: &Limits{MaxArchiveBytes: 10, MaxEntries: 10, MaxFileBytes: 1 << 20, MaxTotalUnpacked: 1 << 20, MaxRatio: 1000}, want: ErrUnsafeArchive, contains: "max-archive-size (10 bytes)"},
		{name: "edited sums", tar: []hm{good[0], good[1], good[2], {name: "demo/SHA256SUMS", body: strings.Replace(good[3].body, "  a.txt", "  b.txt", 1)}}, want: ErrDigestMismatch, contains: "not in the archive"},
		{name: "missing sums", tar: good[:3], want: ErrDigestMismatch, contains: "SHA256SUMS is missing"},
		{name: "unlisted file", tar: with(hm{name: "demo/extra", body: "x"}), want: ErrDigestMismatch, contains: "extra is not listed"},
		{name: "changed file", tar: []hm{good[0], good[1], {name: "demo/a.txt", body: "HELLO\n"}, good[3]}, want: ErrDigestMismatch, contains: "a.txt does not match"},
		{name: "unsorted sums", tar: []hm{good[0], good[1], good[2], {name: "demo/SHA256SUMS", body: unsort(good[3].body)}}, want: ErrDigestMismatch, contains: "not sorted"},
		{name: "invalid skill", tar: []hm{good[0], {name: "demo/SKILL.md", body: "---\nname: other\ndescription: d\n---\n"}}, want: ErrName},
		{name: "zip 1000:1 entry", zip: buildZip(t, append(append([]hm{}, good...), hm{name: "demo/z", body: strings.Repeat("\x00", 10<<20)}), nil), want: ErrUnsafeArchive, contains: "max-compression-ratio (1000:1)"},
		{name: "zip symlink", zip: buildZip(t, with(hm{name: "demo/l", body: "/etc/passwd", typ: tar.TypeSymlink}), nil), want: ErrUnsafeArchive, contains: "symlink"},
		{name: "zip traversal", zip: buildZip(t, with(hm{name: "../evil", body: "x"}), nil), want: ErrUnsafeArchive, contains: "traversal"},
		{name: "zip duplicate", zip: buildZip(t, with(hm{name: "demo/SKILL.md", body: goodSkill}), nil), want: ErrUnsafeArchive, contains: "duplicate"},
		{name: "zip encrypted", zip: buildZip(t, good, func(fh *zip.FileHeader) { fh.Flags |= 0x1 }), want: ErrUnsafeArchive, contains: "encrypted"},
		{name: "zip declared 2 GiB", zip: declaredHuge(t), want: ErrUnsafeArchive, contains: "max-file-size (100 MiB)"},
		{name: "not an archive", zip: []byte("hello world"), want: ErrUnsafeArchive, contains: "neither a zip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p string
			if tt.zip != nil {
				p = writeArchive(t, "x.skill", tt.zip)
			} else {
				p = writeArchive(t, "x.tar.zst", buildTarZst(t, tt.tar))
			}
			if tt.name == "declared 2 GiB" {
				p = writeArchive(t, "x.tar.zst", declaredHugeTar(t))
				tt.want, tt.contains = ErrUnsafeArchive, "max-file-size (100 MiB)"
			}
			_, err := VerifyArchive(p, VerifyOptions{Limits: tt.limits})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("err = %q, want it to mention %q", err, tt.contains)
			}
		})
	}
}

func unsort(sums string) string {
	lines := strings.Split(strings.TrimSuffix(sums, "\n"), "\n")
	lines[0], lines[1] = lines[1], lines[0]
	return strings.Join(lines, "\n") + "\n"
}

// declaredHugeTar is a tar whose header declares 2 GiB but holds 10 bytes.
func declaredHugeTar(t *testing.T) []byte {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	tw.WriteHeader(&tar.Header{Name: "demo/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "demo/big", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2 << 30})
	tw.Write([]byte("0123456789"))
	tw.Flush() // the rest is missing
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	zw.Write(raw.Bytes())
	zw.Close()
	return buf.Bytes()
}

// declaredHuge is a zip whose central directory declares a 2 GiB entry.
func declaredHuge(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "demo/big", Method: zip.Store, CompressedSize64: 10, UncompressedSize64: 2 << 30})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("0123456789"))
	zw.Close()
	return buf.Bytes()
}
