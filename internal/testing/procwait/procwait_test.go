package procwait

import (
	"os/exec"
	"testing"
	"time"
)

// TestExit: a running process has not exited within a short bound; once it
// is killed (and not yet reaped: a zombie) Exit returns true.
func TestExit(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	defer cmd.Wait()
	if Exit(cmd.Process.Pid, 50*time.Millisecond) {
		t.Fatal("a running process counted as exited")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !Exit(cmd.Process.Pid, time.Minute) {
		t.Fatal("a killed process did not exit")
	}
}
