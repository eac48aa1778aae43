//go:build !unix

package fsutil

import "io/fs"

// Owner reports no owner: Windows files carry ACLs, not a user id.
func Owner(fs.FileInfo) (uid int, ok bool) { return 0, false }
