//go:build !unix

package fsutil

import "testing"

func mkfifo(t *testing.T, p string) { t.Skip("no FIFOs here") }

func walkErr(r *Root, rel string) error { return errNoWalk }
