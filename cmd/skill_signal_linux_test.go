package cmd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSkillInstallSIGTERMWhileWaitingForLock: an install waiting for the
// skills lock file (held here) stops on SIGTERM instead of sleeping through
// its retries; it exits with the cancellation, and nothing is installed.
// The signal is sent once the child is observed past start-up (its data
// boundary warning is printed just before the lock is taken).
func TestSkillInstallSIGTERMWhileWaitingForLock(t *testing.T) {
	proj := t.TempDir()
	os.WriteFile(filepath.Join(proj, ".git"), []byte("gitdir: x\n"), 0o644)
	src := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(src, 0o755)
	lock := filepath.Join(proj, "skills-lock.json")
	os.WriteFile(lock, []byte(`{"version":1,"skills":{}}`), 0o644)
	lf, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	c := exec.Command("openadapt-agent", "skill", "install", src, "--agent", "codex")
	c.Dir = proj
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stderr)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, "protected workflow data") {
		c.Process.Kill()
		t.Fatalf("first stderr line %q %v", line, err)
	}
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	var rest strings.Builder
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := rd.Read(b)
			rest.Write(b[:n])
			if err != nil {
				break
			}
		}
		done <- c.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second): // a generous safety net, not a timing assertion
		c.Process.Kill()
		t.Fatal("install ignored SIGTERM")
	}
	if err == nil {
		t.Fatal("install succeeded although the lock was held")
	}
	if !strings.Contains(rest.String(), "context canceled") || strings.Contains(rest.String(), "temporarily unavailable") {
		t.Fatalf("stderr %q: want the cancellation, not the lock retries running out", rest.String())
	}
	if ents, _ := os.ReadDir(filepath.Join(proj, ".agents", "skills")); len(ents) != 0 {
		t.Fatalf("left %d entries in .agents/skills", len(ents))
	}
}
