//go:build !linux

package flowrun

import "time"

// TerminateOrphan is a no-op outside Linux; see the Linux documentation.
func TerminateOrphan(Process, time.Duration) bool { return false }
