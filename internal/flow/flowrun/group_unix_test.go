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
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
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

// pidKnobs are the fake's knobs for a run whose pids a test reads: the
// fake writes "<leader> <grandchild>" to dir/pids, and a hang mode then
// writes one byte to the FIFO dir/ready (see readPIDs).
func pidKnobs(t *testing.T) (dir string, knobs []string) {
	t.Helper()
	dir = t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "ready"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, []string{"PIDFILE=" + filepath.Join(dir, "pids"), "READY=" + filepath.Join(dir, "ready")}
}

// readPIDs returns the pids the fake wrote under dir. wait: the fake is in
// a hang mode, so first wait (without polling) for its byte on the ready
// FIFO, written once the grandchild exists; the bound only stops a hang.
func readPIDs(t *testing.T, dir string, wait bool) (leader, grandchild int) {
	t.Helper()
	leader, grandchild, err := awaitPIDs(dir, wait)
	if err != nil {
		t.Fatal(err)
	}
	return leader, grandchild
}

func awaitPIDs(dir string, wait bool) (leader, grandchild int, err error) {
	if wait {
		ready := make(chan error, 1)
		go func() {
			// Opening a FIFO for reading blocks until the fake opens it.
			f, err := os.Open(filepath.Join(dir, "ready"))
			if err == nil {
				_, err = f.Read(make([]byte, 1))
				f.Close()
			}
			ready <- err
		}()
		select {
		case err := <-ready:
			if err != nil {
				return 0, 0, fmt.Errorf("ready FIFO: %w", err)
			}
		case <-time.After(time.Minute):
			return 0, 0, fmt.Errorf("the fake never signalled its ready FIFO")
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		return 0, 0, fmt.Errorf("the fake wrote no pid file: %w", err)
	}
	if _, err := fmt.Sscanf(string(data), "%d %d", &leader, &grandchild); err != nil {
		return 0, 0, fmt.Errorf("pid file %q: %w", data, err)
	}
	return leader, grandchild, nil
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
	pids, knobs := pidKnobs(t)
	req := h.request(t, append(knobs, "MODE=hang-grandchild", "REPORT=legacy-success")...)
	req.Timeout = 300 * time.Millisecond
	req.TimeoutGrace = 300 * time.Millisecond
	// The timeout clock starts when Started returns: wait there until the
	// grandchild exists, so a slow machine cannot time out the leader first.
	var leader, grandchild int
	var err error
	req.Started = func(Process) { leader, grandchild, err = awaitPIDs(pids, true) }
	res := CLIRunner{}.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
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
	pids, knobs := pidKnobs(t)
	req := h.request(t, append(knobs, "MODE=hang-grandchild", "REPORT=legacy-success")...)
	req.CancelGrace = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- CLIRunner{}.Run(ctx, req) }()
	leader, grandchild := readPIDs(t, pids, true)
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
	pids, knobs := pidKnobs(t)
	var started Process
	got := make(chan Process, 1)
	req := h.request(t, append(knobs, "MODE=hang-grandchild")...)
	req.Started = func(p Process) { got <- p }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- CLIRunner{}.Run(ctx, req) }()
	started = <-got
	leader, grandchild := readPIDs(t, pids, true)
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
	pids, knobs := pidKnobs(t)
	req := h.request(t, append(knobs, "MODE=leave-grandchild", "REPORT=legacy-success")...)
	req.CancelGrace = 200 * time.Millisecond
	res := CLIRunner{}.Run(context.Background(), req)
	if res.Status != StatusSuccess {
		t.Errorf("status %q err %v", res.Status, res.Err)
	}
	_, grandchild := readPIDs(t, pids, false) // Run returned: the pid file is written
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
	pids, knobs := pidKnobs(t)
	cmd := exec.Command(h.flow, "run", h.bundle, "--run-dir", filepath.Join(h.runs, NewRunID()), "--params-file", "/none")
	cmd.Env = []string{"FAKE_FLOW_MODE=hang-grandchild", "FAKE_FLOW_" + knobs[0], "FAKE_FLOW_" + knobs[1]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rec := Process{PID: cmd.Process.Pid, PGID: cmd.Process.Pid, StartTime: procgroup.StartTime(cmd.Process.Pid)}
	_, grandchild := readPIDs(t, pids, true)
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
