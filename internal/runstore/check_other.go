//go:build !unix

package runstore

import "io/fs"

// private: Windows folders carry ACLs, not mode bits or a user id; the
// per-user folder's ACL is the protection there.
func private(string, fs.FileInfo) error { return nil }

// tighten: Windows folders carry ACLs, not mode bits; nothing to change.
func tighten(string, fs.FileInfo) error { return nil }
