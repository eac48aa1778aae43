//go:build !unix

package flowrun

import "os"

// openNoFollow opens path read-only. Without O_NOFOLLOW the caller's lstat
// plus the os.SameFile check after opening refuse a swapped-in symlink.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
