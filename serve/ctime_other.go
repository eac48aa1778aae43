//go:build !linux && !darwin

package serve

import "os"

// ctimeNano is 0 where the platform's stat has no inode change time; size,
// mtime and (where present) inode and device still key the cache.
func ctimeNano(os.FileInfo) uint64 { return 0 }
