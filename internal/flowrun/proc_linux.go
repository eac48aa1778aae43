//go:build linux

package flowrun

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the child in its own process group (so the whole group
// can be signalled) and asks the kernel to send it SIGTERM if the server
// dies (mcp-surface.md §7.2 step 8: "Unix uses Setpgid; Linux also sets
// Pdeathsig=SIGTERM").
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// processStartTime returns field 22 (starttime) of /proc/<pid>/stat, or 0.
func processStartTime(pid int) uint64 {
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

// liveMembers reports whether a process other than a zombie is in group
// pgid. Zombies of a dead server's runs belong to init, which may be slow
// to reap them (or, in some containers, never does).
func liveMembers(pgid int) bool {
	if !groupAlive(pgid) {
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

// groupLive reports whether group pgid still has a process that is not a
// zombie (see liveMembers).
func groupLive(pgid int) bool { return liveMembers(pgid) }
