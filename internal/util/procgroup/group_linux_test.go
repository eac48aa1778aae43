package procgroup

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestGroupLinux: a child started with SysProcAttr leads its own group,
// which Live sees until Kill; the recorded start time tells the leader
// from a reused PID.
func TestGroupLinux(t *testing.T) {
	if StartTime(os.Getpid()) == 0 {
		t.Fatal("no start time for this process")
	}
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = SysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep here:", err)
	}
	g := New(cmd.Process)
	defer g.Close()
	pid := cmd.Process.Pid
	start := StartTime(pid)
	if start == 0 || !g.Live() || !Live(pid) {
		t.Fatalf("the group of a running child: start %d live %v", start, g.Live())
	}
	if TerminateOrphan(pid, start+1, time.Second) {
		t.Fatal("a leader with another start time was signalled")
	}
	if !g.Live() {
		t.Fatal("the mismatched TerminateOrphan ended the group")
	}
	g.Kill()
	_ = cmd.Wait() // reaped: the group is empty now
	if g.Live() || TerminateOrphan(pid, start, time.Second) {
		t.Fatal("the group outlived Kill")
	}
	if _, ok := Signaled(cmd.ProcessState); !ok {
		t.Fatal("Kill's SIGKILL not reported")
	}
}
