//go:build linux

package flowrun

import (
	"syscall"
	"time"
)

// TerminateOrphan terminates the process group of a run left behind by a
// dead server (mcp-surface.md §7.4: "Linux: if the recorded process group
// still exists and its leader's start time matches, terminate it"). It acts
// only when the process p.PGID is alive, still leads group p.PGID and has
// the recorded non-zero StartTime, so a reused PID is never signalled. It
// sends SIGTERM to the group, waits up to grace for the group to empty,
// then sends SIGKILL, and reports whether it signalled anything. On other
// systems it does nothing and returns false.
func TerminateOrphan(p Process, grace time.Duration) bool {
	if p.PGID <= 1 || p.StartTime == 0 {
		return false
	}
	st, ok := readStat(p.PGID)
	if !ok || st.state == 'Z' || st.pgrp != p.PGID || st.start != p.StartTime {
		return false
	}
	_ = syscall.Kill(-p.PGID, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !groupAlive(p.PGID) || onlyZombies(p.PGID) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
	return true
}

// onlyZombies reports whether the group leader is a zombie (not our child,
// so we cannot reap it; its parent or init will).
func onlyZombies(pgid int) bool {
	st, ok := readStat(pgid)
	return !ok || st.state == 'Z'
}
