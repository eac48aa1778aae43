//go:build unix

package flowhelper

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
)

const noFollow = syscall.O_NOFOLLOW

// prepare sets fds 3, 4, 5 = devnull, reqR, respW (docs/helper.md,
// "Process model")
// and returns the argv tail naming them.
func prepare(cmd *exec.Cmd, devnull, reqR, respW *os.File) []string {
	closeInheritedOnExec()
	cmd.ExtraFiles = []*os.File{devnull, reqR, respW}
	cmd.SysProcAttr = procgroup.SysProcAttr()
	return []string{"--in-fd", strconv.Itoa(4), "--out-fd", strconv.Itoa(5)}
}

// closeInheritedOnExec sets FD_CLOEXEC on every descriptor ≥ 3 of this
// process, once. Go opens everything close-on-exec, but descriptors this
// process inherited from its own parent (a shell, an MCP host) are not,
// and os/exec would pass them to the helper, which must get no fd ≥ 6. Our own pipes are passed explicitly through ExtraFiles.
func closeInheritedOnExec() {
	cloexecOnce.Do(func() {
		fds := []int{}
		if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
			for _, e := range ents {
				if n, err := strconv.Atoi(e.Name()); err == nil && n >= 3 {
					fds = append(fds, n)
				}
			}
		} else {
			for n := 3; n < 1024; n++ {
				fds = append(fds, n)
			}
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
		}
	})
}

var cloexecOnce sync.Once
