//go:build !unix

package serve

import "io/fs"

// makePrivate: Windows folders carry ACLs, not mode bits; nothing to do.
func makePrivate(string, fs.FileInfo) error { return nil }
