// Package procwait waits for a process that is not the caller's child to
// exit, without sleeping: on Linux through a pidfd, which becomes readable
// when the process exits (a zombie counts as exited). Tests use it to wait
// for a killed Flow group instead of sleep-and-poll.
package procwait

import "time"

// Exit waits until pid has exited, for at most bound (which only stops a
// hang; it is not a timing assertion). It reports whether pid exited; a pid
// that does not exist has exited.
func Exit(pid int, bound time.Duration) bool { return exit(pid, bound) }
