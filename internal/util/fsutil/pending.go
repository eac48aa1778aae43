package fsutil

import (
	"errors"
	"sync"
)

// Temporaries still pending in this process: the temporary files of
// [Root.WriteFileFunc] and the folders of [Root.MkdirTemp] (so every
// [Root.StageDir]) that were neither renamed into place nor removed yet.
// The process's signal backstop (cmd/root.go) calls [RemovePending] just
// before it exits a command that did not stop in time, so even a forced
// exit leaves no temp or stage folder behind.
var pendingTemps struct {
	sync.Mutex
	closed bool
	m      map[pendingKey]struct{}
}

type pendingKey struct {
	root *Root
	rel  string
}

// ErrShuttingDown is returned when a temporary would be created after
// [RemovePending] ran: the process is about to exit.
var ErrShuttingDown = errors.New("shutting down: no new temporary files")

// creating reports ErrShuttingDown once RemovePending ran.
func creating() error {
	pendingTemps.Lock()
	defer pendingTemps.Unlock()
	if pendingTemps.closed {
		return ErrShuttingDown
	}
	return nil
}

// track records rel (beneath r) as a pending temporary.
func (r *Root) track(rel string) {
	pendingTemps.Lock()
	defer pendingTemps.Unlock()
	if pendingTemps.m == nil {
		pendingTemps.m = map[pendingKey]struct{}{}
	}
	pendingTemps.m[pendingKey{r, rel}] = struct{}{}
}

// untrack forgets rel: it was renamed into place or removed.
func (r *Root) untrack(rel string) {
	pendingTemps.Lock()
	defer pendingTemps.Unlock()
	delete(pendingTemps.m, pendingKey{r, rel})
}

// RemovePending removes every pending temporary through its root (never
// following a link) and refuses new ones from then on. It is for the
// signal backstop, immediately before the process exits; it returns how
// many it removed.
func RemovePending() int {
	pendingTemps.Lock()
	pendingTemps.closed = true
	keys := make([]pendingKey, 0, len(pendingTemps.m))
	for k := range pendingTemps.m {
		keys = append(keys, k)
	}
	pendingTemps.Unlock()
	n := 0
	for _, k := range keys {
		if k.root.RemoveAll(k.rel) == nil {
			n++
		}
	}
	return n
}

// pendingCount is the number of pending temporaries (tests).
func pendingCount() int {
	pendingTemps.Lock()
	defer pendingTemps.Unlock()
	return len(pendingTemps.m)
}
