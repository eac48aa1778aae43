//go:build unix && !linux

package fsutil

// openBeneath: no openat2 here; the caller walks with O_NOFOLLOW.
func openBeneath(dirfd int, rel string) (int, error, bool) { return -1, nil, false }
