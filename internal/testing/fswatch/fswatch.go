// Package fswatch lets a test observe, without sleeping or polling, that a
// process has started reading a file: on Linux through inotify, whose
// IN_ACCESS event arrives on the first read(2) of the watched file by any
// process. Signal tests use it to send SIGINT/SIGTERM once the child is
// observed inside a long read (no fixed sleep).
package fswatch

import "time"

// Watch is an armed watch on one file.
type Watch struct{ w watch }

// Accessed arms a watch on path; call it before starting the reader. ok is
// false where inotify is unavailable (the caller then skips).
func Accessed(path string) (w *Watch, ok bool, err error) {
	iw, ok, err := accessed(path)
	if !ok || err != nil {
		return nil, ok, err
	}
	return &Watch{w: iw}, true, nil
}

// Wait blocks until the file was read, for at most bound (which only stops
// a hang; it is not a timing assertion). It reports whether a read was seen.
func (w *Watch) Wait(bound time.Duration) bool { return w.w.wait(bound) }

// Close releases the watch.
func (w *Watch) Close() { w.w.close() }
