package skill

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"unicode/utf8"
)

// checkZipHeaders compares every central-directory entry with its local
// header, so that an archive that verifies extracts
// the same with every tool: archive/zip reads only the central directory,
// while streaming extractors read local headers. It refuses a different
// name, method or flags; different CRC-32 or sizes (against the data
// descriptor when flag 0x8 is set, as Go's writer does); a name that is not
// valid UTF-8; a non-ASCII name without flag 0x800; and the Info-ZIP
// Unicode path and comment extras (0x7075, 0x6375), which override the name
// in some tools and not others. zr.File must be in central-directory order.
// Then [checkZipLayout] accounts for every byte of the archive.
func checkZipHeaders(ra io.ReaderAt, size int64, files []*zip.File) error {
	er, err := centralDirectory(ra, size)
	if err != nil {
		return err
	}
	if er.n != len(files) {
		return fmt.Errorf("%w: the central directory holds %d entries, the end record says %d", ErrUnsafeArchive, len(files), er.n)
	}
	unsafe := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrUnsafeArchive, fmt.Sprintf(f, a...)) }
	off := er.cdOff
	spans := make([]localSpan, 0, len(files))
	for _, zf := range files {
		var h [46]byte
		if _, err := ra.ReadAt(h[:], off); err != nil || binary.LittleEndian.Uint32(h[0:]) != 0x02014b50 {
			return unsafe("unreadable central directory")
		}
		flags := binary.LittleEndian.Uint16(h[8:])
		method := binary.LittleEndian.Uint16(h[10:])
		nameLen := int64(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int64(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int64(binary.LittleEndian.Uint16(h[32:]))
		localOff := int64(binary.LittleEndian.Uint32(h[42:]))
		buf := make([]byte, nameLen+extraLen)
		if _, err := ra.ReadAt(buf, off+46); err != nil {
			return unsafe("unreadable central directory")
		}
		name, extra := buf[:nameLen], buf[nameLen:]
		off += 46 + nameLen + extraLen + commentLen
		shown := fmt.Sprintf("%q", name)
		if !utf8.Valid(name) {
			return unsafe("an entry name is not valid UTF-8")
		}
		if !isASCII(string(name)) && flags&0x800 == 0 {
			return unsafe("entry %s has a non-ASCII name without the UTF-8 flag (0x800)", shown)
		}
		if err := refuseExtras(extra, shown); err != nil {
			return err
		}
		if localOff == 0xFFFFFFFF {
			localOff = zip64Offset(extra, binary.LittleEndian.Uint32(h[24:]) == 0xFFFFFFFF, binary.LittleEndian.Uint32(h[20:]) == 0xFFFFFFFF)
		}
		var l [30]byte
		if localOff < 0 || localOff >= size {
			return unsafe("entry %s: local header outside the archive", shown)
		}
		if _, err := ra.ReadAt(l[:], localOff); err != nil || binary.LittleEndian.Uint32(l[0:]) != 0x04034b50 {
			return unsafe("entry %s: no local header where the central directory points", shown)
		}
		lflags := binary.LittleEndian.Uint16(l[6:])
		lmethod := binary.LittleEndian.Uint16(l[8:])
		lNameLen := int64(binary.LittleEndian.Uint16(l[26:]))
		lExtraLen := int64(binary.LittleEndian.Uint16(l[28:]))
		lbuf := make([]byte, lNameLen+lExtraLen)
		if _, err := ra.ReadAt(lbuf, localOff+30); err != nil {
			return unsafe("entry %s: truncated local header", shown)
		}
		if !bytes.Equal(lbuf[:lNameLen], name) {
			return unsafe("entry %s: the local header names a different file than the central directory", shown)
		}
		if err := refuseExtras(lbuf[lNameLen:], shown); err != nil {
			return err
		}
		if lmethod != method || lflags != flags {
			return unsafe("entry %s: local header and central directory disagree (method or flags)", shown)
		}
		crc, csize, usize := zf.CRC32, zf.CompressedSize64, zf.UncompressedSize64
		dataOff := localOff + 30 + lNameLen + lExtraLen
		// archive/zip must read the entry this check read.
		if zoff, err := zf.DataOffset(); err != nil || zoff != dataOff {
			return unsafe("entry %s: its data is not where its local header says", shown)
		}
		if csize > uint64(size) || dataOff+int64(csize) > size {
			return unsafe("entry %s: its data runs past the end of the archive", shown)
		}
		sp := localSpan{off: localOff, end: dataOff + int64(csize), shown: shown}
		if flags&0x8 == 0 {
			lcrc := binary.LittleEndian.Uint32(l[14:])
			lc := uint64(binary.LittleEndian.Uint32(l[18:]))
			lu := uint64(binary.LittleEndian.Uint32(l[22:]))
			if lc == 0xFFFFFFFF || lu == 0xFFFFFFFF {
				lu, lc = zip64Sizes(lbuf[lNameLen:], lu, lc)
			}
			if lcrc != crc || lc != csize || lu != usize {
				return unsafe("entry %s: local header and central directory disagree (CRC-32 or size)", shown)
			}
			spans = append(spans, sp)
			continue
		}
		if method != zip.Deflate {
			return unsafe("entry %s: stored with a data descriptor, its end is where each tool guesses", shown)
		}
		// Flag 0x8: the data descriptor after the data holds the values.
		var d [24]byte
		k, _ := ra.ReadAt(d[:], dataOff+int64(csize))
		dd := d[:k]
		if len(dd) >= 4 && binary.LittleEndian.Uint32(dd) == 0x08074b50 {
			dd = dd[4:]
		}
		if len(dd) < 12 {
			return unsafe("entry %s: missing data descriptor", shown)
		}
		descLen := int64(k - len(dd) + 12) // the signature, when present, and crc and sizes
		dcrc := binary.LittleEndian.Uint32(dd)
		dc, du := uint64(binary.LittleEndian.Uint32(dd[4:])), uint64(binary.LittleEndian.Uint32(dd[8:]))
		if (csize >= 0xFFFFFFFF || usize >= 0xFFFFFFFF) && len(dd) >= 20 {
			dc, du = binary.LittleEndian.Uint64(dd[4:]), binary.LittleEndian.Uint64(dd[12:])
			descLen += 8
		}
		if dcrc != crc || dc != csize || du != usize {
			return unsafe("entry %s: data descriptor and central directory disagree (CRC-32 or size)", shown)
		}
		sp.end += descLen
		spans = append(spans, sp)
	}
	return checkZipLayout(ra, size, er, off, spans)
}

// refuseExtras refuses the Info-ZIP Unicode path (0x7075) and comment
// (0x6375) extra fields.
func refuseExtras(extra []byte, shown string) error {
	for len(extra) >= 4 {
		tag := binary.LittleEndian.Uint16(extra)
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if tag == 0x7075 || tag == 0x6375 {
			return fmt.Errorf("%w: entry %s carries an Info-ZIP Unicode extra field (0x%04x), which tools apply differently", ErrUnsafeArchive, shown, tag)
		}
		if 4+n > len(extra) {
			break
		}
		extra = extra[4+n:]
	}
	return nil
}

// zip64Field returns the zip64 extended-information extra (0x0001) body.
func zip64Field(extra []byte) []byte {
	for len(extra) >= 4 {
		tag := binary.LittleEndian.Uint16(extra)
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if 4+n > len(extra) {
			return nil
		}
		if tag == 0x0001 {
			return extra[4 : 4+n]
		}
		extra = extra[4+n:]
	}
	return nil
}

// zip64Offset reads the local header offset from a central zip64 extra,
// after the sizes that are also stored there. -1 when absent.
func zip64Offset(extra []byte, usizeThere, csizeThere bool) int64 {
	b := zip64Field(extra)
	i := 0
	if usizeThere {
		i += 8
	}
	if csizeThere {
		i += 8
	}
	if len(b) < i+8 {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b[i:]))
}

// zip64Sizes reads the local header's zip64 sizes (uncompressed first).
func zip64Sizes(extra []byte, u, c uint64) (uint64, uint64) {
	b := zip64Field(extra)
	if len(b) >= 16 {
		return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	}
	return u, c
}

// endRecords are where the end-of-central-directory records lie.
type endRecords struct {
	cdOff  int64 // the central directory
	n      int   // its entry count
	eocdAt int64 // the end-of-central-directory record
	// zip64At and locAt are the zip64 end record and its locator, -1 when
	// the archive has none.
	zip64At, locAt int64
}

// centralDirectory finds the central directory's offset and entry count
// from the end-of-central-directory record (zip64 when needed).
func centralDirectory(ra io.ReaderAt, size int64) (endRecords, error) {
	bad := fmt.Errorf("%w: reading zip: no end of central directory", ErrUnsafeArchive)
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return endRecords{}, bad
	}
	// The last signature whose record and comment fit in the file, as
	// archive/zip finds it (the layout check then wants the comment to end
	// the file exactly).
	i := len(buf)
	for {
		i = bytes.LastIndex(buf[:i], []byte("PK\x05\x06"))
		if i < 0 {
			return endRecords{}, bad
		}
		if len(buf)-i >= 22 && i+22+int(binary.LittleEndian.Uint16(buf[i+20:])) <= len(buf) {
			break
		}
	}
	e := buf[i:]
	er := endRecords{eocdAt: size - tail + int64(i), zip64At: -1, locAt: -1}
	n := int64(binary.LittleEndian.Uint16(e[10:]))
	off := int64(binary.LittleEndian.Uint32(e[16:]))
	if n == 0xFFFF || off == 0xFFFFFFFF {
		// zip64 end-of-central-directory locator, just before the record.
		locAt := er.eocdAt - 20
		var loc [20]byte
		if locAt < 0 {
			return endRecords{}, bad
		}
		if _, err := ra.ReadAt(loc[:], locAt); err != nil || binary.LittleEndian.Uint32(loc[:]) != 0x07064b50 {
			return endRecords{}, bad
		}
		recAt := int64(binary.LittleEndian.Uint64(loc[8:]))
		var rec [56]byte
		if recAt < 0 || recAt >= size {
			return endRecords{}, bad
		}
		if _, err := ra.ReadAt(rec[:], recAt); err != nil || binary.LittleEndian.Uint32(rec[:]) != 0x06064b50 {
			return endRecords{}, bad
		}
		n = int64(binary.LittleEndian.Uint64(rec[32:]))
		off = int64(binary.LittleEndian.Uint64(rec[48:]))
		er.zip64At, er.locAt = recAt, locAt
	}
	if off < 0 || off >= size || n < 0 || n > 1<<20 {
		return endRecords{}, bad
	}
	er.cdOff, er.n = off, int(n)
	return er, nil
}

// localSpan is one listed entry as it lies in the archive: from its local
// header to the end of its data and data descriptor.
type localSpan struct {
	off, end int64
	shown    string
}

// checkZipLayout walks the archive from its first byte, as a streaming
// extractor reads it, and refuses any byte that is not part of a listed
// entry or of the central directory and its end records: the listed local
// entries must follow each other from offset 0 with no gap and no overlap
// up to the central directory, which the end records (the zip64 ones
// allowed) and the zip comment follow exactly to the end of the file. So a
// local entry the central directory does not list (a "../" name included),
// a prefix, padding or trailing data is refused. What lies inside a listed
// entry's data is checked as it is read: a deflated entry must inflate to
// exactly its listed compressed size ([openZipEntry]), since a streaming
// extractor finds the end of a deflated entry by inflating it.
func checkZipLayout(ra io.ReaderAt, size int64, er endRecords, cdEnd int64, spans []localSpan) error {
	unsafe := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrUnsafeArchive, fmt.Sprintf(f, a...)) }
	sorted := slices.Clone(spans)
	slices.SortStableFunc(sorted, func(a, b localSpan) int { return cmp.Compare(a.off, b.off) })
	at := int64(0)
	for _, sp := range sorted {
		switch {
		case sp.off > at && at == 0:
			return unsafe("%d bytes before the first entry that no entry lists", sp.off)
		case sp.off > at:
			return unsafe("%d bytes before entry %s that no entry lists (a gap, or a local entry missing from the central directory)", sp.off-at, sp.shown)
		case sp.off < at:
			return unsafe("entry %s overlaps the entry before it", sp.shown)
		}
		at = sp.end
	}
	switch {
	case er.cdOff > at:
		return unsafe("%d bytes between the last entry and the central directory that no entry lists (a gap, or a local entry missing from the central directory)", er.cdOff-at)
	case er.cdOff < at:
		return unsafe("the central directory overlaps an entry")
	}
	// The central directory, then the end records, then the comment.
	next := cdEnd
	if er.zip64At >= 0 {
		var h [12]byte
		if _, err := ra.ReadAt(h[:], er.zip64At); err != nil {
			return unsafe("unreadable zip64 end record")
		}
		recLen := binary.LittleEndian.Uint64(h[4:])
		if er.zip64At != next || recLen < 44 || recLen > uint64(size) || er.locAt != er.zip64At+12+int64(recLen) {
			return unsafe("bytes outside the entries around the zip64 end records")
		}
		next = er.locAt + 20
	}
	var e [22]byte
	if _, err := ra.ReadAt(e[:], er.eocdAt); err != nil {
		return unsafe("unreadable end of central directory")
	}
	if er.eocdAt != next {
		return unsafe("%d bytes between the central directory and its end record", er.eocdAt-next)
	}
	if end := er.eocdAt + 22 + int64(binary.LittleEndian.Uint16(e[20:])); end != size {
		return unsafe("%d bytes after the end of the archive (past its comment)", size-end)
	}
	return nil
}

// errShortDeflate: a deflate stream that ends before its entry's listed
// compressed size.
var errShortDeflate = errors.New("its deflate stream ends before the data the central directory lists")

// openZipEntry opens zf's content as zip.File.Open does (the CRC-32 and
// size checked at the end, no more bytes than declared), and, for a
// deflated entry, also refuses a deflate stream that ends before the
// entry's listed compressed size: the bytes after it are what a streaming
// extractor reads next (a data descriptor, another local entry) while the
// central directory counts them as data. One pass: the content is inflated
// once.
func openZipEntry(zf *zip.File) (io.ReadCloser, error) {
	if zf.Method != zip.Deflate {
		return zf.Open()
	}
	raw, err := zf.OpenRaw()
	if err != nil {
		return nil, err
	}
	cr := &countingReader{r: raw}
	br := bufio.NewReader(cr)
	return &exactEntry{zf: zf, cr: cr, br: br, fr: flate.NewReader(br), crc: crc32.NewIEEE()}, nil
}

// exactEntry is a deflated entry's content with zip.File.Open's checks
// and the check that the deflate stream used every listed byte.
type exactEntry struct {
	zf  *zip.File
	cr  *countingReader
	br  *bufio.Reader // what flate reads; its unread bytes were not used
	fr  io.ReadCloser
	crc hash.Hash32
	n   uint64
	err error
}

func (e *exactEntry) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.fr.Read(p)
	e.crc.Write(p[:n])
	e.n += uint64(n)
	switch {
	case e.n > e.zf.UncompressedSize64:
		err = zip.ErrFormat
	case err == io.EOF && (e.n != e.zf.UncompressedSize64 || e.crc.Sum32() != e.zf.CRC32):
		err = zip.ErrChecksum
	case err == io.EOF && e.cr.n-int64(e.br.Buffered()) != int64(e.zf.CompressedSize64):
		err = errShortDeflate
	case err != nil && err != io.EOF:
		err = zip.ErrFormat
	}
	e.err = err
	return n, err
}

func (e *exactEntry) Close() error { return e.fr.Close() }

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
