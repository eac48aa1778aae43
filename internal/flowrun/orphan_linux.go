//go:build linux

package flowrun

import (
	"syscall"
	"time"
)

// TerminateOrphan terminates the process group of a run left behind by a
// dead server (mcp-surface.md §7.4: "Linux: if the recorded process group
// still exists and its leader's start time matches, terminate it").
//
// It acts when the leader p.PGID is alive, still leads group p.PGID and has
// the recorded non-zero StartTime, so a reused PID is never signalled. It
// also acts when the leader is gone but the group still has members (the
// browser Flow started, after Flow itself died of the server's death
// signal): Linux never hands out a number that is still some process's
// group id, so a surviving group with that id is the run's own. It sends
// SIGTERM to the group, waits up to grace for the group to empty, then
// sends SIGKILL, and reports whether it signalled anything. On other
// systems it does nothing and returns false.
func TerminateOrphan(p Process, grace time.Duration) bool {
	if p.PGID <= 1 || p.StartTime == 0 {
		return false
	}
	if st, ok := readStat(p.PGID); ok {
		// The number is in use by a live process: only our leader counts.
		if st.state == 'Z' || st.pgrp != p.PGID || st.start != p.StartTime {
			return false
		}
	} else if !liveMembers(p.PGID) {
		return false
	}
	_ = syscall.Kill(-p.PGID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && liveMembers(p.PGID) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
	return true
}
