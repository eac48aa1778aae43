//go:build !unix

package skill

import (
	"context"
	"os"
)

// lockFile is a no-op where flock does not exist (Windows): the lock file is
// still rewritten in place through one handle.
func lockFile(context.Context, *os.File) error { return nil }

func unlockFile(*os.File) {}
