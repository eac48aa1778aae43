package skill

import (
	"fmt"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldKey is how two entry names are compared for collisions, by pack and
// verify alike: the full Unicode case fold of the NFC
// form. "é.md" in NFC and in NFD, "Docs" and "docs", "ß" and "ss" collide,
// as they do on macOS, Windows and many archive tools.
func foldKey(name string) string {
	return cases.Fold().String(norm.NFC.String(name))
}

// nameSet applies the one collision rule set of pack and verify: no two
// entries may share a fold key, every folder prefix must be spelled one way
// only (Docs/x.md with docs/y.md is refused), and no file may share a fold
// key with a folder.
type nameSet struct {
	entries map[string]string // fold key of a whole entry → its name
	dirs    map[string]string // fold key of a folder → its spelling
	files   map[string]string // fold key of a file → its name
}

func newNameSet() *nameSet {
	return &nameSet{entries: map[string]string{}, dirs: map[string]string{}, files: map[string]string{}}
}

func collide(a, b string) string {
	return fmt.Sprintf("%q and %q collide after Unicode normalisation and case folding", a, b)
}

// add records the slash path p (no trailing slash), a folder when isDir. It
// returns a message naming the colliding names, or "".
func (s *nameSet) add(p string, isDir bool) string {
	k := foldKey(p)
	if other, ok := s.entries[k]; ok {
		if other == p {
			return fmt.Sprintf("duplicate entry %q", p)
		}
		return "duplicate entry: " + collide(other, p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		prefix := p[:i]
		pk := foldKey(prefix)
		if other, ok := s.files[pk]; ok {
			return fmt.Sprintf("duplicate entry %q: a parent is a file (%q)", p, other)
		}
		if other, ok := s.dirs[pk]; ok && other != prefix {
			return "folders " + collide(other, prefix)
		}
		s.dirs[pk] = prefix
	}
	if isDir {
		if other, ok := s.dirs[k]; ok && other != p {
			return "folders " + collide(other, p)
		}
		s.dirs[k] = p
	} else {
		if other, ok := s.dirs[k]; ok {
			return fmt.Sprintf("duplicate entry %q: also a folder (%q)", p, other)
		}
		s.files[k] = p
	}
	s.entries[k] = p
	return ""
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
