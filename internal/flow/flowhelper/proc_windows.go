//go:build windows

package flowhelper

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
)

const noFollow = 0

// prepare passes the pipe handles through AdditionalInheritedHandles
// (the Windows form of the fd table, docs/helper.md "Process model").
func prepare(cmd *exec.Cmd, devnull, reqR, respW *os.File) []string {
	_ = devnull
	cmd.SysProcAttr = procgroup.SysProcAttr()
	cmd.SysProcAttr.AdditionalInheritedHandles = []syscall.Handle{syscall.Handle(reqR.Fd()), syscall.Handle(respW.Fd())}
	return []string{"--in-handle", strconv.FormatUint(uint64(reqR.Fd()), 10), "--out-handle", strconv.FormatUint(uint64(respW.Fd()), 10)}
}
