package skill

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
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
func checkZipHeaders(ra io.ReaderAt, size int64, files []*zip.File) error {
	cdOff, n, err := centralDirectory(ra, size)
	if err != nil {
		return err
	}
	if n != len(files) {
		return fmt.Errorf("%w: the central directory holds %d entries, the end record says %d", ErrUnsafeArchive, len(files), n)
	}
	unsafe := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrUnsafeArchive, fmt.Sprintf(f, a...)) }
	off := cdOff
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
			continue
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
		dcrc := binary.LittleEndian.Uint32(dd)
		dc, du := uint64(binary.LittleEndian.Uint32(dd[4:])), uint64(binary.LittleEndian.Uint32(dd[8:]))
		if (csize >= 0xFFFFFFFF || usize >= 0xFFFFFFFF) && len(dd) >= 20 {
			dc, du = binary.LittleEndian.Uint64(dd[4:]), binary.LittleEndian.Uint64(dd[12:])
		}
		if dcrc != crc || dc != csize || du != usize {
			return unsafe("entry %s: data descriptor and central directory disagree (CRC-32 or size)", shown)
		}
	}
	return nil
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

// centralDirectory finds the central directory's offset and entry count
// from the end-of-central-directory record (zip64 when needed).
func centralDirectory(ra io.ReaderAt, size int64) (int64, int, error) {
	bad := fmt.Errorf("%w: reading zip: no end of central directory", ErrUnsafeArchive)
	tail := min(size, 22+65535)
	buf := make([]byte, tail)
	if _, err := ra.ReadAt(buf, size-tail); err != nil && err != io.EOF {
		return 0, 0, bad
	}
	i := bytes.LastIndex(buf, []byte("PK\x05\x06"))
	if i < 0 || len(buf)-i < 22 {
		return 0, 0, bad
	}
	e := buf[i:]
	n := int64(binary.LittleEndian.Uint16(e[10:]))
	off := int64(binary.LittleEndian.Uint32(e[16:]))
	if n == 0xFFFF || off == 0xFFFFFFFF {
		// zip64 end-of-central-directory locator, just before the record.
		locAt := size - tail + int64(i) - 20
		var loc [20]byte
		if locAt < 0 {
			return 0, 0, bad
		}
		if _, err := ra.ReadAt(loc[:], locAt); err != nil || binary.LittleEndian.Uint32(loc[:]) != 0x07064b50 {
			return 0, 0, bad
		}
		recAt := int64(binary.LittleEndian.Uint64(loc[8:]))
		var rec [56]byte
		if recAt < 0 || recAt >= size {
			return 0, 0, bad
		}
		if _, err := ra.ReadAt(rec[:], recAt); err != nil || binary.LittleEndian.Uint32(rec[:]) != 0x06064b50 {
			return 0, 0, bad
		}
		n = int64(binary.LittleEndian.Uint64(rec[32:]))
		off = int64(binary.LittleEndian.Uint64(rec[48:]))
	}
	if off < 0 || off >= size || n < 0 || n > 1<<20 {
		return 0, 0, bad
	}
	return off, int(n), nil
}
