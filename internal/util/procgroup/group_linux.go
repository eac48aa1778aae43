//go:build linux

package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// SysProcAttr puts the child in its own process group (so the whole group
// can be signalled) and asks the kernel to send it SIGTERM if this process
// dies.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// StartTime is field 22 (starttime, clock ticks since boot) of
// /proc/<pid>/stat, or 0 when it cannot be read: with the PID it names one
// process for as long as the system runs, so a reused PID is never taken
// for the process recorded.
func StartTime(pid int) uint64 {
	st, ok := readStat(pid)
	if !ok {
		return 0
	}
	return st.start
}

type procStat struct {
	state byte
	pgrp  int
	start uint64
}

// readStat parses /proc/<pid>/stat. The command name (field 2) may hold
// spaces and parentheses, so fields are counted after the last ')'.
func readStat(pid int) (procStat, bool) {
	// A kernel file (size 0 in stat, so not for fsutil's sized read).
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(data[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	pgrp, err1 := strconv.Atoi(string(f[2]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, true
}

// Live reports whether a process other than a zombie is in group pgid.
// Zombies of a dead parent's children belong to init, which may be slow to
// reap them (or, in some containers, never does).
func Live(pgid int) bool {
	if !alive(pgid) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.pgrp == pgid && st.state != 'Z' {
			return true
		}
	}
	return false
}

// TerminateOrphan terminates a process group left behind by a dead parent
// (docs/runs.md, Long runs and interruption): on Linux, when the recorded
// process group still exists and its leader's start time matches.
//
// It acts when the leader pgid is alive, still leads group pgid and has the
// recorded non-zero start time, so a reused PID is never signalled. It also
// acts when the leader is gone but the group still has members (the browser
// Flow started, after Flow itself died of the parent's death signal): Linux
// never hands out a number that is still some process's group id, so a
// surviving group with that id is the one recorded. It sends SIGTERM to the
// group, waits up to grace for the group to empty, then sends SIGKILL, and
// reports whether it signalled anything. Elsewhere it does nothing and
// returns false.
func TerminateOrphan(pgid int, start uint64, grace time.Duration) bool {
	if pgid <= 1 || start == 0 {
		return false
	}
	if st, ok := readStat(pgid); ok {
		// The number is in use by a live process: only our leader counts.
		if st.state == 'Z' || st.pgrp != pgid || st.start != start {
			return false
		}
	} else if !Live(pgid) {
		return false
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) && Live(pgid) {
		time.Sleep(20 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}
