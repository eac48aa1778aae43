//go:build unix

package flowrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/procwait"
)

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if i := strings.LastIndexByte(string(data), ')'); i > 0 && i+2 < len(data) && data[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// waitGone waits until pid has exited (a zombie counts). The bound only
// stops a hang; it is not a timing assertion.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if procwait.Exit(pid, time.Minute) {
		return
	}
	t.Errorf("process %d is still alive", pid)
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

func readPIDs(t *testing.T, path string) (leader, grandchild int) {
	t.Helper()
	leader, grandchild, ok := waitPIDs(path)
	if !ok {
		t.Fatal("the fake never wrote its pid file")
	}
	return leader, grandchild
}

// waitPIDs polls for the fake's pid file (bounded only to stop a hang).
func waitPIDs(path string) (leader, grandchild int, ok bool) {
	for i := 0; i < 6000; i++ {
		data, err := os.ReadFile(path)
		if err == nil {
			if _, err := fmt.Sscanf(string(data), "%d %d", &leader, &grandchild); err == nil {
				return leader, grandchild, true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0, 0, false
}

// TestTimeoutKillsWholeGroup: a Flow that ignores SIGTERM and whose
// grandchild ignores it too is killed as a group on timeout; the status is
// timeout even though a VERIFIED report was written first, and no params
// file or process is left.
func TestTimeoutKillsWholeGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process-group checks use /proc")
	}
	t.Parallel()
	h := newHarness(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	req := h.request(t, "MODE=hang-grandchild", "PIDFILE="+pidfile, "REPORT=legacy-success")
	req.Timeout = 300 * time.Millisecond
	req.TimeoutGrace = 300 * time.Millisecond
	// The timeout clock starts when Started returns: wait there until the
	// grandchild exists, so a slow machine cannot time out the leader first.
	var leader, grandchild int
	var ok bool
	req.Started = func(Process) { leader, grandchild, ok = waitPIDs(pidfile) }
	res := CLIRunner{}.Run(context.Background(), req)
	if !ok {
		t.Fatal("the fake never wrote its pid file")
	}
	if res.Status != StatusTimeout || res.Outcome != "" || res.ExitCode != nil || res.Summary != (Summary{}) {
		t.Errorf("result = %+v, want bare timeout", res.Verdict)
	}
	waitGone(t, leader)
	waitGone(t, grandchild)
	h.assertNoParamsFiles(t)
}

// TestCancelIsInterrupted: cancelling the run context (server shutdown)
// kills the group and gives interrupted, never a report's success.
func TestCancelIsInterrupted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process-group checks use /proc")
	}
	t.Parallel()
	h := newHarness(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	req := h.request(t, "MODE=hang-grandchild", "PIDFILE="+pidfile, "REPORT=legacy-success")
	req.CancelGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- CLIRunner{}.Run(ctx, req) }()
	leader, grandchild := readPIDs(t, pidfile)
	cancel()
	res := <-done
	if res.Status != StatusInterrupted || res.Outcome != "" {
		t.Errorf("result = %+v, want interrupted", res.Verdict)
	}
	waitGone(t, leader)
	waitGone(t, grandchild)
	h.assertNoParamsFiles(t)
}

// TestTerminateOrphan: a live group whose leader matches the record is
// terminated; a mismatching start time is left alone.
func TestTerminateOrphan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	h := newHarness(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	var started Process
	got := make(chan Process, 1)
	req := h.request(t, "MODE=hang-grandchild", "PIDFILE="+pidfile)
	req.Started = func(p Process) { got <- p }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- CLIRunner{}.Run(ctx, req) }()
	started = <-got
	leader, grandchild := readPIDs(t, pidfile)
	if TerminateOrphan(Process{PID: started.PID, PGID: started.PGID, StartTime: started.StartTime + 1}, time.Second) {
		t.Error("terminated a group whose start time does not match")
	}
	if !alive(leader) {
		t.Fatal("leader died early")
	}
	if !TerminateOrphan(started, 200*time.Millisecond) {
		t.Error("did not terminate the recorded group")
	}
	res := <-done
	if res.Status != StatusHalt && res.Status != StatusError {
		// The leader died by SIGKILL: a nonzero exit without a report.
		t.Errorf("status %q", res.Status)
	}
	waitGone(t, leader)
	waitGone(t, grandchild)
	if TerminateOrphan(Process{}, time.Second) || TerminateOrphan(started, time.Second) {
		t.Error("TerminateOrphan signalled a missing group")
	}
}

// TestStragglerCleanup: a Flow that exits normally but leaves a
// SIGTERM-ignoring grandchild in its group: Run still returns the report's
// outcome and the grandchild is killed (no orphans).
func TestStragglerCleanup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process-group checks use /proc")
	}
	t.Parallel()
	h := newHarness(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	req := h.request(t, "MODE=leave-grandchild", "PIDFILE="+pidfile, "REPORT=legacy-success")
	req.CancelGrace = 200 * time.Millisecond
	res := CLIRunner{}.Run(context.Background(), req)
	if res.Status != StatusSuccess {
		t.Errorf("status %q err %v", res.Status, res.Err)
	}
	_, grandchild := readPIDs(t, pidfile)
	waitGone(t, grandchild)
}

// TestTerminateOrphanLeaderGone: the leader died (as Flow does on the
// server's death signal) but its grandchild survives in the group: the
// group is still the run's and is terminated.
func TestTerminateOrphanLeaderGone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	h := newHarness(t)
	pidfile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(h.flow, "run", h.bundle, "--run-dir", filepath.Join(h.runs, NewRunID()), "--params-file", "/none")
	cmd.Env = []string{"FAKE_FLOW_MODE=hang-grandchild", "FAKE_FLOW_PIDFILE=" + pidfile}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec := Process{PID: cmd.Process.Pid, PGID: cmd.Process.Pid, StartTime: processStartTime(cmd.Process.Pid)}
	_, grandchild := readPIDs(t, pidfile)
	_ = cmd.Process.Kill()
	_ = cmd.Wait() // the leader is gone; the grandchild keeps the group
	if !alive(grandchild) {
		t.Fatal("grandchild died with the leader")
	}
	if !TerminateOrphan(rec, 200*time.Millisecond) {
		t.Error("did not terminate the leaderless group")
	}
	waitGone(t, grandchild)
	if TerminateOrphan(rec, time.Second) {
		t.Error("signalled an empty group")
	}
}
