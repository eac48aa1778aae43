//go:build windows

package flowhelper

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

const noFollow = 0

// procGroup is a kill-on-close job object (as internal/flowrun).
type procGroup struct {
	p   *os.Process
	job windows.Handle
}

func (g procGroup) term() { g.kill() }
func (g procGroup) kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
	}
	if g.p != nil {
		_ = g.p.Kill()
	}
}
func (g procGroup) release() {
	if g.job != 0 {
		_ = windows.CloseHandle(g.job)
	}
}

// prepare passes the pipe handles through AdditionalInheritedHandles
// (flow-helper.md §2.4, Windows).
func prepare(cmd *exec.Cmd, devnull, reqR, respW *os.File) []string {
	_ = devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags:              syscall.CREATE_NEW_PROCESS_GROUP,
		AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(reqR.Fd()), syscall.Handle(respW.Fd())},
	}
	return []string{"--in-handle", strconv.FormatUint(uint64(reqR.Fd()), 10), "--out-handle", strconv.FormatUint(uint64(respW.Fd()), 10)}
}

func started(cmd *exec.Cmd) procGroup {
	g := procGroup{p: cmd.Process}
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
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
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
