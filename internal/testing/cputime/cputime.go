// Package cputime is the process CPU time (user + system, all threads) that
// benchmarks report beside wall time, where the platform has it.
package cputime

import "time"

// Now is this process's CPU time so far, or 0 where the platform does not
// report it (benchmarks then report wall time only).
func Now() time.Duration { return now() }
