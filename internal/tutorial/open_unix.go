//go:build unix

package tutorial

import "syscall"

// oNoFollow makes opening the state record fail on a symlink, and
// O_NONBLOCK keeps a planted FIFO from blocking the open.
const oNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
