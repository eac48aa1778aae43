//go:build windows

package flowrun

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// sysProcAttr starts the child in a new process group; newGroup then puts
// it in a job object.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// procGroup is a job object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE holding
// the child and everything it starts (mcp-surface.md §7.2: "Windows uses a
// job object with kill-on-close"). If the job cannot be set up, job is 0
// and only the direct child is killed. A process the child starts before
// it is assigned to the job (a few instructions after CreateProcess) is not
// covered; Flow starts its browser much later.
type procGroup struct {
	p   *os.Process
	job windows.Handle
}

func newGroup(p *os.Process) procGroup {
	g := procGroup{p: p}
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

// signal terminates the whole job (Windows has no SIGTERM for a console-less
// child), or the direct child without a job.
func (g procGroup) signal(syscall.Signal) {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
		return
	}
	_ = g.p.Kill()
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

// live reports whether the job still has an active process.
func (g procGroup) live() bool {
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

// close releases the job; kill-on-close ends anything still in it.
func (g procGroup) close() {
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
	}
}

func signaled(*os.ProcessState) (int, bool) { return 0, false }

func processStartTime(int) uint64 { return 0 }
