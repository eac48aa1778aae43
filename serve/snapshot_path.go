//go:build !linux && !darwin

package serve

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Elsewhere the identity walk (cache.go) uses paths: each entry is
// os.Lstat'ed by its full path (a link in the last component is seen, not
// followed), and a sub-folder is looked up again before its entries to
// check it is still the folder its entry recorded.

// dirHandle is a folder of the walk, by path.
type dirHandle struct{ path string }

func identOfInfo(fi fs.FileInfo) entryIdent {
	ino, dev := fileIdent(fi)
	return entryIdent{
		mode:  uint64(fi.Mode()),
		size:  uint64(fi.Size()),
		dev:   dev,
		ino:   ino,
		mtime: uint64(fi.ModTime().UnixNano()),
		ctime: ctimeNano(fi),
		dir:   fi.IsDir(),
	}
}

// openRootDir checks the bundle folder is a folder (not a link) and
// returns its identity.
func openRootDir(path string) (dirHandle, entryIdent, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return dirHandle{}, entryIdent{}, false
	}
	return dirHandle{path}, identOfInfo(fi), true
}

// stat is the identity of the entry name of d, not following a link.
func (d dirHandle) stat(name string) (entryIdent, bool) {
	fi, err := os.Lstat(filepath.Join(d.path, name))
	if err != nil {
		return entryIdent{}, false
	}
	return identOfInfo(fi), true
}

// open returns the sub-folder name of d when it is still the folder want.
func (d dirHandle) open(name string, want entryIdent) (dirHandle, bool) {
	p := filepath.Join(d.path, name)
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() || identOfInfo(fi) != want {
		return dirHandle{}, false
	}
	return dirHandle{p}, true
}

// openDir returns the sub-folder name of d and its identity when it is a
// folder (not a link).
func (d dirHandle) openDir(name string) (dirHandle, entryIdent, bool) {
	p := filepath.Join(d.path, name)
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return dirHandle{}, entryIdent{}, false
	}
	return dirHandle{p}, identOfInfo(fi), true
}

// names lists d's entries in byte order.
func (d dirHandle) names() ([]string, bool) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, false
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, true
}

func (dirHandle) close() {}
