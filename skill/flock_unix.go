//go:build unix

package skill

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock, retrying lockTries times lockDelay
// apart.
func lockFile(f *os.File) error {
	var err error
	for i := 0; i < lockTries; i++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		time.Sleep(lockDelay)
	}
	return err
}

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
