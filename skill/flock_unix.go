//go:build unix

package skill

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock, retrying lockTries times lockDelay
// apart; a canceled ctx (SIGINT/SIGTERM) stops the wait at once.
func lockFile(ctx context.Context, f *os.File) error {
	var err error
	for i := 0; i < lockTries; i++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if i == 0 && testOnlyLockBusy != nil {
			testOnlyLockBusy()
		}
		t := time.NewTimer(lockDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return err
}

// testOnlyLockBusy, when set, runs when the first try finds the lock
// held (tests use it to know a writer is waiting before releasing it).
var testOnlyLockBusy func()

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
