//go:build !linux

package procgroup

import "time"

// TerminateOrphan does nothing outside Linux; see the Linux documentation.
func TerminateOrphan(int, uint64, time.Duration) bool { return false }
