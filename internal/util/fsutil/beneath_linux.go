package fsutil

import (
	"errors"

	"golang.org/x/sys/unix"
)

// openBeneath opens the folder rel beneath dirfd in one openat2 call that
// refuses every symlink and any escape (RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH).
// ok is false when the kernel lacks openat2 (or a sandbox forbids it), so
// the caller walks component by component instead.
func openBeneath(dirfd int, rel string) (int, error, bool) {
	fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{
		Flags:   uint64(dirFlags),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.E2BIG) {
		return -1, nil, false
	}
	return fd, err, true
}

// renameNoReplace renames old (in olddir) to new (in newdir) only if new
// does not exist, in one renameat2(RENAME_NOREPLACE) call. ok is false
// when the kernel or file system lacks it, so the caller links instead.
func renameNoReplace(olddir int, old string, newdir int, new string) (error, bool) {
	err := unix.Renameat2(olddir, old, newdir, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM) {
		return nil, false
	}
	return err, true
}
