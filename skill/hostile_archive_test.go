package skill

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

func wantUnsafeArchive(t *testing.T, data []byte, contains string) {
	t.Helper()
	p := writeArchive(t, "demo.skill", data)
	_, err := VerifyArchive(p, VerifyOptions{})
	if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), contains) {
		t.Fatalf("err = %v, want ErrUnsafeArchive containing %q", err, contains)
	}
}

// TestVerifyZipHeaderConsistency: archives whose local headers and central
// directory disagree, or whose names tools read differently, are refused
// (before, archive/zip read only the central directory and accepted them).
func TestVerifyZipHeaderConsistency(t *testing.T) {
	good := buildZip(t, goodMembers(), nil)
	if _, err := VerifyArchive(writeArchive(t, "demo.skill", good), VerifyOptions{}); err != nil {
		t.Fatalf("Go-written zip with data descriptors (flag 0x8): %v", err)
	}

	t.Run("local name differs", func(t *testing.T) {
		data := bytes.Clone(good)
		i := bytes.Index(data, []byte("demo/a.txt")) // the local header comes first
		copy(data[i:], "demo/b.txt")
		wantUnsafeArchive(t, data, "local header names a different file")
	})
	t.Run("data descriptor size differs", func(t *testing.T) {
		data := bytes.Clone(good)
		zr, _ := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		for _, zf := range zr.File {
			if zf.Name == "demo/a.txt" {
				off, _ := zf.DataOffset()
				dd := off + int64(zf.CompressedSize64)
				if binary.LittleEndian.Uint32(data[dd:]) != 0x08074b50 {
					t.Fatal("no data descriptor signature")
				}
				binary.LittleEndian.PutUint32(data[dd+12:], uint32(zf.UncompressedSize64)+1)
			}
		}
		wantUnsafeArchive(t, data, "data descriptor and central directory disagree")
	})
	t.Run("local size differs without flag 0x8", func(t *testing.T) {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, m := range goodMembers() {
			if m.typ == tar.TypeDir {
				continue
			}
			fh := &zip.FileHeader{Name: m.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(m.body)),
				CompressedSize64: uint64(len(m.body)), UncompressedSize64: uint64(len(m.body))}
			fh.SetMode(0o644)
			w, err := zw.CreateRaw(fh)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(m.body))
		}
		zw.Close()
		data := buf.Bytes()
		if _, err := VerifyArchive(writeArchive(t, "raw.skill", data), VerifyOptions{}); err != nil {
			t.Fatalf("stored zip without descriptors: %v", err)
		}
		// Patch the first local header's uncompressed size.
		binary.LittleEndian.PutUint32(data[22:], binary.LittleEndian.Uint32(data[22:])+1)
		wantUnsafeArchive(t, data, "local header and central directory disagree (CRC-32 or size)")
	})
	t.Run("name not UTF-8", func(t *testing.T) {
		data := buildZip(t, append(goodMembers(), hm{name: "demo/\xff.txt", body: "x"}), func(fh *zip.FileHeader) {
			fh.NonUTF8 = !strings.HasPrefix(fh.Name, "demo/S") && !strings.HasPrefix(fh.Name, "demo/a")
		})
		wantUnsafeArchive(t, data, "not valid UTF-8")
	})
	t.Run("non-ASCII name without 0x800", func(t *testing.T) {
		data := buildZip(t, append(goodMembers(), hm{name: "demo/é.txt", body: "x"}), func(fh *zip.FileHeader) {
			fh.NonUTF8 = strings.Contains(fh.Name, "é")
		})
		wantUnsafeArchive(t, data, "without the UTF-8 flag (0x800)")
	})
	for _, tag := range []uint16{0x7075, 0x6375} {
		t.Run("unicode extra", func(t *testing.T) {
			data := buildZip(t, goodMembers(), func(fh *zip.FileHeader) {
				if fh.Name == "demo/a.txt" {
					fh.Extra = binary.LittleEndian.AppendUint16(nil, tag)
					fh.Extra = append(fh.Extra, 5, 0, 1, 0, 0, 0, 0)
				}
			})
			wantUnsafeArchive(t, data, "Info-ZIP Unicode extra field")
		})
	}
}

// twinMembers adds two entries (bodies "1" and "2") to the good skill,
// with SHA256SUMS listing everything.
func twinMembers(a, b string) []hm {
	files := map[string]string{"SKILL.md": goodSkill, "a.txt": "hello\n", a: "1", b: "2"}
	return []hm{
		{name: "demo/", typ: tar.TypeDir},
		{name: "demo/SKILL.md", body: goodSkill},
		{name: "demo/a.txt", body: "hello\n"},
		{name: "demo/" + a, body: "1"},
		{name: "demo/" + b, body: "2"},
		{name: "demo/SHA256SUMS", body: sumsFor(files)},
	}
}

// TestVerifyUnicodeAndCaseTwins: NFC/NFD twins, full-case-fold twins and
// folders spelled two ways are refused by verify (zip and tar.zst) and by
// pack, with the one rule set.
func TestVerifyUnicodeAndCaseTwins(t *testing.T) {
	cases := []struct{ a, b, contains string }{
		{"\u00e9.md", "e\u0301.md", "collide after Unicode normalisation"},
		{"Docs/x.md", "docs/y.md", "\"demo/Docs\" and \"demo/docs\" collide"},
		{"stra\u00dfe.md", "STRASSE.md", "collide after Unicode normalisation"},
		{"caf\u00e9/x.md", "cafe\u0301/y.md", "collide after Unicode normalisation"},
	}
	for _, c := range cases {
		t.Run(c.a+"+"+c.b, func(t *testing.T) {
			m := twinMembers(c.a, c.b)
			wantUnsafeArchive(t, buildZip(t, m, nil), c.contains)
			p := writeArchive(t, "demo.tar.zst", buildTarZst(t, m))
			if _, err := VerifyArchive(p, VerifyOptions{}); !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("tar.zst: %v", err)
			}
			// pack refuses the same tree (the file system here keeps both).
			dir := filepath.Join(t.TempDir(), "demo")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(goodSkill), 0o644)
			for i, n := range []string{c.a, c.b} {
				p := filepath.Join(dir, filepath.FromSlash(n))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte{byte('1' + i)}, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) < 3 {
				t.Skip("this file system folds names itself")
			}
			var out bytes.Buffer
			if _, err := Pack(dir, &out, PackOptions{Format: FormatZip}); !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), "collide after Unicode normalisation and case folding") {
				t.Fatalf("pack: %v", err)
			}
		})
	}
	// Distinct names that only look alike stay accepted.
	if _, err := VerifyArchive(writeArchive(t, "ok.skill", buildZip(t, twinMembers("x.md", "y.md"), nil)), VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

// FuzzVerifyExtract: whenever verification accepts an archive, extraction
// writes only regular files and folders inside the root, exactly the files
// SHA256SUMS lists (SHA256SUMS itself is not extracted), nothing else.
func FuzzVerifyExtract(f *testing.F) {
	f.Add(buildTarZst(f, goodMembers()))
	f.Add(buildZip(f, goodMembers(), nil))
	f.Add(buildZip(f, twinMembers("sub/x.md", "sub/y.md"), nil))
	f.Add(buildZip(f, twinMembers("\u00e9.md", "e\u0301.md"), nil))
	base := f.TempDir()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		dir := filepath.Join(base, "run", strings.Repeat("x", n%7)+string(rune('a'+n%26))+strings.Repeat("y", n/26%5))
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		defer os.RemoveAll(dir)
		p := filepath.Join(base, "x")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lim := Limits{MaxArchiveBytes: 1 << 20, MaxEntries: 100, MaxFileBytes: 1 << 20, MaxTotalUnpacked: 4 << 20, MaxRatio: 1000}
		if _, err := VerifyArchive(p, VerifyOptions{Limits: &lim}); err != nil {
			return
		}
		r, err := fsutil.OpenRoot(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		res, err := extractArchive(p, VerifyOptions{Limits: &lim}, r, ".")
		if err != nil {
			t.Fatalf("verify accepted, extraction failed: %v", err)
		}
		top := filepath.Join(dir, res.Name)
		// The extracted files, with their digests, must reproduce the tree
		// digest verify reported: exactly the listed files, byte for byte.
		entries, _, err := walkTree(top, walkOptions{})
		if err != nil {
			t.Fatalf("extracted tree is not a plain tree: %v", err)
		}
		if err := hashEntries(top, entries, 1); err != nil {
			t.Fatal(err)
		}
		if got := TreeDigest(sumsBytes(entries)); got != res.TreeDigest {
			t.Fatalf("extracted tree digest %s, verify said %s", got, res.TreeDigest)
		}
		// Nothing outside top.
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 || ents[0].Name() != res.Name || !ents[0].IsDir() {
			t.Fatalf("extraction wrote %v beside the top folder", ents)
		}
		filepath.WalkDir(top, func(q string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !d.Type().IsRegular() {
				t.Fatalf("extraction made a non-regular file %s", q)
			}
			return nil
		})
	})
}
