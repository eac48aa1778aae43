//go:build !unix

package fsutil

import "io/fs"

// Owner reports no owner: Windows files carry ACLs, not a user id.
func Owner(fs.FileInfo) (uid int, ok bool) { return 0, false }

// Links reports no link count (Windows).
func Links(fs.FileInfo) (n uint64, ok bool) { return 0, false }

// checkOurs: Windows files carry ACLs, not an owner id or mode bits; the
// per-user folders' ACLs are the protection there.
func checkOurs(string, fs.FileInfo) error { return nil }
