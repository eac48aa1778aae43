//go:build windows

package procgroup

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// SysProcAttr starts the child in a new process group; [New] then puts it
// in a job object.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// Group is a job object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE holding the
// child and everything it starts (docs/runs.md, Process group, timeout,
// cancellation). If the job cannot be set up, job is 0 and
// only the direct child is ended. A process the child starts before it is
// assigned to the job (a few instructions after CreateProcess) is not
// covered; Flow starts its browser much later.
type Group struct {
	p   *os.Process
	job windows.Handle
}

// New puts p in a new kill-on-close job object.
func New(p *os.Process) Group {
	g := Group{p: p}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return g
	}
	g.job = job
	return g
}

// Term ends the whole job: Windows has no SIGTERM for a console-less child.
func (g Group) Term() { g.Kill() }

// Kill terminates the whole job and the direct child.
func (g Group) Kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
	if g.p != nil {
		_ = g.p.Kill()
	}
}

// basicAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION.
type basicAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// Live reports whether the job still has an active process.
func (g Group) Live() bool {
	if g.job == 0 {
		return false
	}
	var info basicAccounting
	if err := windows.QueryInformationJobObject(g.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return false
	}
	return info.ActiveProcesses > 0
}

// Close releases the job; kill-on-close ends anything still in it.
func (g Group) Close() {
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
	}
}

// Signaled is always false: no signals on Windows.
func Signaled(*os.ProcessState) (int, bool) { return 0, false }

// StartTime is 0: reconciliation of orphaned runs is Linux-only.
func StartTime(int) uint64 { return 0 }
