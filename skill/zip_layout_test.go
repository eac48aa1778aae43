package skill

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// The helpers below edit a zip archive by hand: they find the end record
// and the central directory and patch offsets, sizes and counts, so a
// crafted archive is still one archive/zip reads without complaint.

type zipEnd struct{ eocd, cdOff, cdSize, n int }

func zipEndOf(t *testing.T, data []byte) zipEnd {
	t.Helper()
	i := bytes.LastIndex(data, []byte("PK\x05\x06"))
	if i < 0 {
		t.Fatal("no end record")
	}
	return zipEnd{eocd: i, n: int(binary.LittleEndian.Uint16(data[i+10:])),
		cdSize: int(binary.LittleEndian.Uint32(data[i+12:])), cdOff: int(binary.LittleEndian.Uint32(data[i+16:]))}
}

// centralRecords splits the central directory into its records.
func centralRecords(t *testing.T, data []byte) (zipEnd, [][]byte) {
	t.Helper()
	e := zipEndOf(t, data)
	var recs [][]byte
	for off := e.cdOff; off < e.cdOff+e.cdSize; {
		n := 46 + int(binary.LittleEndian.Uint16(data[off+28:])) + int(binary.LittleEndian.Uint16(data[off+30:])) + int(binary.LittleEndian.Uint16(data[off+32:]))
		recs = append(recs, bytes.Clone(data[off:off+n]))
		off += n
	}
	return e, recs
}

func recName(rec []byte) string {
	return string(rec[46 : 46+int(binary.LittleEndian.Uint16(rec[28:]))])
}

// rebuild writes body (everything before the central directory), the
// records and a fresh end record with comment.
func rebuild(body []byte, recs [][]byte, comment string) []byte {
	out := bytes.Clone(body)
	cdOff := len(out)
	for _, r := range recs {
		out = append(out, r...)
	}
	e := make([]byte, 22)
	binary.LittleEndian.PutUint32(e, 0x06054b50)
	binary.LittleEndian.PutUint16(e[8:], uint16(len(recs)))
	binary.LittleEndian.PutUint16(e[10:], uint16(len(recs)))
	binary.LittleEndian.PutUint32(e[12:], uint32(len(out)-cdOff))
	binary.LittleEndian.PutUint32(e[16:], uint32(cdOff))
	binary.LittleEndian.PutUint16(e[20:], uint16(len(comment)))
	return append(append(out, e...), comment...)
}

// insertBefore inserts junk at offset at of the body and moves every
// local header offset at or after it.
func insertBefore(t *testing.T, data []byte, at int, junk []byte) []byte {
	t.Helper()
	e, recs := centralRecords(t, data)
	for _, r := range recs {
		if lo := int(binary.LittleEndian.Uint32(r[42:])); lo >= at {
			binary.LittleEndian.PutUint32(r[42:], uint32(lo+len(junk)))
		}
	}
	body := append(append(bytes.Clone(data[:at]), junk...), data[at:e.cdOff]...)
	return rebuild(body, recs, "")
}

// localOffset is where the local header of name starts.
func localOffset(t *testing.T, data []byte, name string) int {
	t.Helper()
	_, recs := centralRecords(t, data)
	for _, r := range recs {
		if recName(r) == name {
			return int(binary.LittleEndian.Uint32(r[42:]))
		}
	}
	t.Fatalf("no entry %s", name)
	return 0
}

// evilEntry is a whole local entry (header, deflated data, descriptor)
// named ../evil.txt, cut out of an archive of its own.
func evilEntry(t *testing.T) []byte {
	t.Helper()
	one := buildZip(t, []hm{{name: "../evil.txt", body: "planted\n"}}, nil)
	return bytes.Clone(one[:zipEndOf(t, one).cdOff])
}

// TestVerifyZipLayout: every byte of a zip must belong to a listed entry,
// the central directory or its end records (the zip64 ones and a comment
// allowed). A local entry the central directory does not list (a ../ name
// included), a gap, an overlap, a prefix, data after the end record, and a
// deflate stream that ends before its listed size are refused: a streaming
// extractor would read files nobody verified (before, all of these
// verified).
func TestVerifyZipLayout(t *testing.T) {
	good := buildZip(t, goodMembers(), nil)
	verifies := func(t *testing.T, data []byte) {
		t.Helper()
		if _, err := VerifyArchive(writeArchive(t, "demo.skill", data), VerifyOptions{}); err != nil {
			t.Fatalf("a well-formed archive is refused: %v", err)
		}
	}
	verifies(t, good)
	e, recs := centralRecords(t, good)
	body := good[:e.cdOff]

	t.Run("zip comment allowed", func(t *testing.T) {
		verifies(t, rebuild(body, recs, "a comment, PK\x05\x06 inside"))
	})
	t.Run("zip64 end records allowed", func(t *testing.T) {
		out := bytes.Clone(good[:e.cdOff+e.cdSize])
		recAt := len(out)
		rec := make([]byte, 56)
		binary.LittleEndian.PutUint32(rec, 0x06064b50)
		binary.LittleEndian.PutUint64(rec[4:], 44)
		binary.LittleEndian.PutUint16(rec[12:], 45)
		binary.LittleEndian.PutUint16(rec[14:], 45)
		binary.LittleEndian.PutUint64(rec[24:], uint64(e.n))
		binary.LittleEndian.PutUint64(rec[32:], uint64(e.n))
		binary.LittleEndian.PutUint64(rec[40:], uint64(e.cdSize))
		binary.LittleEndian.PutUint64(rec[48:], uint64(e.cdOff))
		out = append(out, rec...)
		loc := make([]byte, 20)
		binary.LittleEndian.PutUint32(loc, 0x07064b50)
		binary.LittleEndian.PutUint64(loc[8:], uint64(recAt))
		binary.LittleEndian.PutUint32(loc[16:], 1)
		out = append(out, loc...)
		end := make([]byte, 22)
		binary.LittleEndian.PutUint32(end, 0x06054b50)
		binary.LittleEndian.PutUint16(end[8:], 0xFFFF)
		binary.LittleEndian.PutUint16(end[10:], 0xFFFF)
		binary.LittleEndian.PutUint32(end[12:], 0xFFFFFFFF)
		binary.LittleEndian.PutUint32(end[16:], 0xFFFFFFFF)
		verifies(t, append(out, end...))
	})
	t.Run("unlisted ../ entry between listed ones", func(t *testing.T) {
		wantUnsafeArchive(t, insertBefore(t, good, localOffset(t, good, "demo/a.txt"), evilEntry(t)), "no entry lists")
	})
	t.Run("unlisted ../ entry after the last one", func(t *testing.T) {
		wantUnsafeArchive(t, rebuild(append(bytes.Clone(body), evilEntry(t)...), recs, ""), "no entry lists")
	})
	t.Run("unlisted ../ entry first", func(t *testing.T) {
		wantUnsafeArchive(t, insertBefore(t, good, 0, evilEntry(t)), "before the first entry")
	})
	t.Run("self-extractor prefix", func(t *testing.T) {
		var buf bytes.Buffer
		buf.WriteString("#!/bin/sh\nexit 0\n")
		zw := zip.NewWriter(&buf)
		zw.SetOffset(int64(buf.Len()))
		for _, m := range goodMembers()[1:] {
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Deflate})
			w.Write([]byte(m.body))
		}
		zw.Close()
		wantUnsafeArchive(t, buf.Bytes(), "") // not even taken for a zip
	})
	t.Run("gap between entries", func(t *testing.T) {
		wantUnsafeArchive(t, insertBefore(t, good, localOffset(t, good, "demo/a.txt"), []byte("padding")), "no entry lists")
	})
	t.Run("bytes before the central directory", func(t *testing.T) {
		wantUnsafeArchive(t, rebuild(append(bytes.Clone(body), "junk"...), recs, ""), "the central directory that no entry lists")
	})
	t.Run("bytes between the central directory and its end", func(t *testing.T) {
		out := bytes.Clone(good[:e.cdOff+e.cdSize])
		out = append(out, "junk"...)
		wantUnsafeArchive(t, append(out, good[e.eocd:]...), "between the central directory and its end record")
	})
	t.Run("bytes after the end record", func(t *testing.T) {
		wantUnsafeArchive(t, append(bytes.Clone(good), "trailing"...), "after the end of the archive")
	})
	t.Run("two central entries for one local entry", func(t *testing.T) {
		var dup [][]byte
		for _, r := range recs {
			dup = append(dup, r)
			if recName(r) == "demo/a.txt" {
				dup = append(dup, r)
			}
		}
		wantUnsafeArchive(t, rebuild(body, dup, ""), "overlaps")
	})
	t.Run("entry pointing inside another", func(t *testing.T) {
		// a.txt is stored and its content is a whole local entry of
		// demo/b.txt; a central record lists that inner entry too.
		var ib bytes.Buffer
		izw := zip.NewWriter(&ib)
		iw, _ := izw.CreateRaw(&zip.FileHeader{Name: "demo/b.txt", Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte("inner\n")),
			CompressedSize64: 6, UncompressedSize64: 6})
		iw.Write([]byte("inner\n"))
		izw.Close()
		inner := ib.Bytes()
		innerLocal := inner[:zipEndOf(t, inner).cdOff]
		_, innerRecs := centralRecords(t, inner)
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, m := range goodMembers()[1:] {
			content := []byte(m.body)
			if m.name == "demo/a.txt" {
				content = innerLocal
			}
			fh := &zip.FileHeader{Name: m.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE(content),
				CompressedSize64: uint64(len(content)), UncompressedSize64: uint64(len(content))}
			fh.SetMode(0o644)
			w, _ := zw.CreateRaw(fh)
			w.Write(content)
		}
		zw.Close()
		data := buf.Bytes()
		e2, recs2 := centralRecords(t, data)
		r := innerRecs[0]
		binary.LittleEndian.PutUint32(r[42:], uint32(bytes.Index(data, innerLocal)))
		wantUnsafeArchive(t, rebuild(data[:e2.cdOff], append(recs2, r), ""), "overlaps")
	})
	t.Run("deflate stream ends before its listed size", func(t *testing.T) {
		// After a.txt's deflate stream: a descriptor a streaming extractor
		// takes as a.txt's, then ../evil.txt; the listed size and the real
		// descriptor cover both.
		zr, _ := zip.NewReader(bytes.NewReader(good), int64(len(good)))
		var a *zip.File
		for _, zf := range zr.File {
			if zf.Name == "demo/a.txt" {
				a = zf
			}
		}
		dataOff, _ := a.DataOffset()
		end := int(dataOff) + int(a.CompressedSize64)
		desc := bytes.Clone(good[end : end+16])
		hidden := append(bytes.Clone(desc), evilEntry(t)...)
		realDesc := bytes.Clone(desc)
		binary.LittleEndian.PutUint32(realDesc[8:], uint32(int(a.CompressedSize64)+len(hidden)))
		out := append(bytes.Clone(good[:end]), hidden...)
		out = append(out, realDesc...)
		out = append(out, good[end+16:e.cdOff]...)
		_, recs3 := centralRecords(t, good)
		for _, r := range recs3 {
			if recName(r) == "demo/a.txt" {
				binary.LittleEndian.PutUint32(r[20:], uint32(int(a.CompressedSize64)+len(hidden)))
			}
			if lo := int(binary.LittleEndian.Uint32(r[42:])); lo > end {
				binary.LittleEndian.PutUint32(r[42:], uint32(lo+len(hidden)))
			}
		}
		wantUnsafeArchive(t, rebuild(out, recs3, ""), "deflate stream ends before")
	})
	t.Run("folder entry holding a local entry", func(t *testing.T) {
		hidden := evilEntry(t)
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.CreateRaw(&zip.FileHeader{Name: "demo/", Method: zip.Store, CRC32: crc32.ChecksumIEEE(hidden),
			CompressedSize64: uint64(len(hidden)), UncompressedSize64: uint64(len(hidden))})
		w.Write(hidden)
		for _, m := range goodMembers()[1:] {
			w, _ := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: zip.Deflate})
			w.Write([]byte(m.body))
		}
		zw.Close()
		// archive/zip's writer lists a folder with no data, so the hidden
		// bytes are outside every listed entry (with a listed size the
		// folder entry itself is refused as holding data).
		wantUnsafeArchive(t, buf.Bytes(), "")
	})
	t.Run("stored with a data descriptor", func(t *testing.T) {
		data := buildZip(t, goodMembers(), func(fh *zip.FileHeader) { fh.Method = zip.Store })
		wantUnsafeArchive(t, data, "stored with a data descriptor")
	})
}
