//go:build windows

package serve

import "os"

// fileIdent has no inode on Windows; size and mtime still key the cache.
func fileIdent(os.FileInfo) (ino, dev uint64) { return 0, 0 }
