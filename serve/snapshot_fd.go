//go:build linux || darwin

package serve

import (
	"slices"

	"golang.org/x/sys/unix"
)

// On Linux and macOS the identity walk (cache.go) works on folder
// descriptors: the bundle folder is opened with O_DIRECTORY|O_NOFOLLOW,
// each sub-folder the same way relative to its parent's descriptor, and
// every entry is stat'ed by its one-component name relative to its folder
// (fstatat with AT_SYMLINK_NOFOLLOW) into a Stat_t on the stack. No link is
// followed anywhere beneath the bundle folder, a lookup resolves one path
// component instead of the whole path, and no FileInfo is allocated per
// entry. Opening a folder only reads its entries' names: no file is opened.

const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY

// dirHandle is an open folder of the walk.
type dirHandle struct{ fd int }

func identOf(st *unix.Stat_t) entryIdent {
	return entryIdent{
		mode:  uint64(st.Mode),
		size:  uint64(st.Size),
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		mtime: uint64(st.Mtim.Sec)*1e9 + uint64(st.Mtim.Nsec),
		ctime: uint64(st.Ctim.Sec)*1e9 + uint64(st.Ctim.Nsec),
		dir:   st.Mode&unix.S_IFMT == unix.S_IFDIR,
	}
}

// openat opens name relative to dirfd as a folder, never through a link.
func openat(dirfd int, name string) (int, bool) {
	for {
		fd, err := unix.Openat(dirfd, name, dirOpenFlags, 0)
		if err != unix.EINTR {
			return fd, err == nil
		}
	}
}

func fstat(fd int, st *unix.Stat_t) bool {
	for {
		err := unix.Fstat(fd, st)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

// openRootDir opens the bundle folder (a link or anything but a folder
// fails) and returns its identity, taken from the opened descriptor.
func openRootDir(path string) (dirHandle, entryIdent, bool) {
	fd, ok := openat(unix.AT_FDCWD, path)
	if !ok {
		return dirHandle{-1}, entryIdent{}, false
	}
	var st unix.Stat_t
	if !fstat(fd, &st) {
		unix.Close(fd)
		return dirHandle{-1}, entryIdent{}, false
	}
	return dirHandle{fd}, identOf(&st), true
}

// stat is the identity of the entry name of d, not following a link.
func (d dirHandle) stat(name string) (entryIdent, bool) {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			return identOf(&st), true
		}
		if err != unix.EINTR {
			return entryIdent{}, false
		}
	}
}

// open opens the sub-folder name of d, which stat reported as want: it
// fails when name is now a link or not a folder (O_NOFOLLOW|O_DIRECTORY),
// or when the folder opened is not the one stat saw.
func (d dirHandle) open(name string, want entryIdent) (dirHandle, bool) {
	fd, ok := openat(d.fd, name)
	if !ok {
		return dirHandle{-1}, false
	}
	var st unix.Stat_t
	if !fstat(fd, &st) || identOf(&st) != want {
		unix.Close(fd)
		return dirHandle{-1}, false
	}
	return dirHandle{fd}, true
}

// openDir opens the sub-folder name of d (never through a link: a link or
// anything but a folder fails) and returns it with its identity, taken
// from the opened descriptor: one lookup fewer than stat then open, for a
// folder the walk is about to enter anyway.
func (d dirHandle) openDir(name string) (dirHandle, entryIdent, bool) {
	fd, ok := openat(d.fd, name)
	if !ok {
		return dirHandle{-1}, entryIdent{}, false
	}
	var st unix.Stat_t
	if !fstat(fd, &st) {
		unix.Close(fd)
		return dirHandle{-1}, entryIdent{}, false
	}
	return dirHandle{fd}, identOf(&st), true
}

// names lists d's entries ("." and ".." left out) in byte order.
func (d dirHandle) names() ([]string, bool) {
	var names []string
	buf := make([]byte, 8<<10)
	for {
		n, err := unix.ReadDirent(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n < 0 {
			return nil, false
		}
		if n == 0 {
			break
		}
		for b := buf[:n]; len(b) > 0; {
			used, _, more := unix.ParseDirent(b, -1, names)
			if used <= 0 {
				return nil, false
			}
			b, names = b[used:], more
		}
	}
	slices.Sort(names)
	return names, true
}

func (d dirHandle) close() {
	if d.fd >= 0 {
		unix.Close(d.fd)
	}
}
