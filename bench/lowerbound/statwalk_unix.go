//go:build unix

package main

import (
	"slices"

	"golang.org/x/sys/unix"
)

// statWalk is the per-file stat walk the digest cache's key needs, and
// nothing else: the bundle folder opened with O_DIRECTORY|O_NOFOLLOW and
// fstat'ed, its entries listed and each stat'ed by name relative to its
// folder (fstatat, AT_SYMLINK_NOFOLLOW), every sub-folder opened the same
// way relative to its parent and walked likewise. It returns the number of
// entries stat'ed, or -1 when the folder cannot be walked.
func statWalk(path string) int {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		unix.Close(fd)
		return -1
	}
	n := walkFD(fd)
	if n < 0 {
		return -1
	}
	return n + 1
}

var direntBuf = make(chan []byte, 64)

func walkFD(fd int) int {
	defer unix.Close(fd)
	var buf []byte
	select {
	case buf = <-direntBuf:
	default:
		buf = make([]byte, 8<<10)
	}
	defer func() {
		select {
		case direntBuf <- buf:
		default:
		}
	}()
	var names []string
	for {
		k, err := unix.ReadDirent(fd, buf)
		if err != nil {
			return -1
		}
		if k == 0 {
			break
		}
		for b := buf[:k]; len(b) > 0; {
			used, _, more := unix.ParseDirent(b, -1, names)
			b, names = b[used:], more
		}
	}
	slices.Sort(names)
	n := 0
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			return -1
		}
		n++
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil || unix.Fstat(sub, &st) != nil {
				return -1
			}
			k := walkFD(sub)
			if k < 0 {
				return -1
			}
			n += k
		}
	}
	return n
}
