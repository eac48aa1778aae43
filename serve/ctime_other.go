//go:build !linux && !darwin

package serve

import "os"

// ctimeNano is 0 where the path-based identity walk (snapshot_path.go)
// runs: there the platform's stat gives no inode change time through one
// portable field; size, mtime and (where present) inode and device still
// key the cache.
func ctimeNano(os.FileInfo) uint64 { return 0 }
