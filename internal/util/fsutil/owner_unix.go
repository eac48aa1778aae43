//go:build unix

package fsutil

import (
	"io/fs"
	"os"
	"syscall"
)

// geteuid is the effective user files must belong to (tests replace it to
// simulate another user without root).
var geteuid = os.Geteuid

// Owner returns the user id owning fi, for a FileInfo from [Root.Lstat] or
// from the os package; ok is false when fi carries none.
func Owner(fi fs.FileInfo) (uid int, ok bool) {
	uid, _, ok = ownerLinks(fi)
	return uid, ok
}

// Links returns the hard-link count of fi, for a FileInfo from
// [Root.Lstat] or from the os package; ok is false when fi carries none.
func Links(fi fs.FileInfo) (n uint64, ok bool) {
	_, n, ok = ownerLinks(fi)
	return n, ok
}

func ownerLinks(fi fs.FileInfo) (uid int, links uint64, ok bool) {
	if f, isOurs := fi.(*fileInfo); isOurs {
		return int(f.st.Uid), uint64(f.st.Nlink), true
	}
	if st, isStat := fi.Sys().(*syscall.Stat_t); isStat && st != nil {
		return int(st.Uid), uint64(st.Nlink), true
	}
	return 0, 0, false
}

// checkOurs applies [CheckOurs]'s rules to fi.
func checkOurs(path string, fi fs.FileInfo) error {
	uid, links, ok := ownerLinks(fi)
	if !ok {
		return nil
	}
	switch {
	case uid != geteuid():
		return &NotOursError{Path: path, Reason: "is owned by another user", Fix: "move it aside or remove it (as its owner or root), then run the command again"}
	case !fi.IsDir() && links > 1:
		return &NotOursError{Path: path, Reason: "has more than one hard link", Fix: "break the link: copy it and move the copy over it (cp " + path + " " + path + ".copy && mv " + path + ".copy " + path + "), or remove it", Linked: true}
	case fi.Mode().Perm()&0o022 != 0:
		return &NotOursError{Path: path, Reason: "is writable by other users", Fix: "chmod go-w " + path}
	}
	return nil
}
