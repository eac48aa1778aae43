//go:build unix && !linux

package fsutil

// openBeneath: no openat2 here; the caller walks with O_NOFOLLOW.
func openBeneath(dirfd int, rel string) (int, error, bool) { return -1, nil, false }

// renameNoReplace: no renameat2 here; the caller links instead.
func renameNoReplace(olddir int, old string, newdir int, new string) (error, bool) { return nil, false }
