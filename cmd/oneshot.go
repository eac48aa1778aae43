package cmd

import (
	"os"
	"runtime"
	"runtime/debug"
)

// oneShotHeap is the memory a short-lived command may grow to before its
// first garbage collection. `ledger verify` of the embedded snapshot
// allocates about 2.5 MB on top of the ~2 MB that package initialisation
// leaves, so under the default GOGC=100 (a 4 MB first goal) it collected
// twice, and those two cycles (background marking, assists, write barriers,
// sweeping) cost about 9 ms of CPU in a 40 ms process (BENCHMARKS.md,
// Start-up). Below this limit nothing is collected: the process exits first.
const oneShotHeap = 32 << 20

// Test hooks: testOnlyOneShotTuned is called when the collector has been
// tuned, testOnlyOneShotRestored once the first collection has restored it.
var testOnlyOneShotTuned, testOnlyOneShotRestored func()

// oneShotGC tunes the collector for a command that runs once and exits
// (`ledger verify`, `ledger admission`), when that command owns the process
// (Main, not Run): no collection until the runtime's memory reaches
// oneShotHeap, then, from the first collection on, the settings the process
// had (GOGC=100 and no memory limit by default), so a large input (a
// 10,000-entry registry) is collected as before and its peak memory stays
// about twice its live heap. Never call it from a long-running command
// (serve). A GOGC or GOMEMLIMIT in the environment wins: then nothing
// changes.
func (io *IO) oneShotGC() {
	if !io.process {
		return
	}
	tuneOneShotGC(os.Getenv) // once: Main runs one command
}

func tuneOneShotGC(getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(oneShotHeap)
	// The sentinel is unreachable at once, so the first collection (the one
	// the memory limit triggers) runs its cleanup, which restores the
	// settings. It is 64 bytes so that the tiny allocator never puts it in a
	// block with a live object, which would delay the cleanup.
	restored := testOnlyOneShotRestored
	runtime.AddCleanup(new([64]byte), func(struct{}) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
		if restored != nil {
			restored()
		}
	}, struct{}{})
	if testOnlyOneShotTuned != nil {
		testOnlyOneShotTuned()
	}
}
