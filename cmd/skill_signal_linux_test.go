package cmd

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestSkillInstallSIGTERMWhileWaitingForLock: an install waiting for the
// skills lock file (held here) stops on SIGTERM instead of sleeping through
// its retries; it exits with the cancellation, and nothing is installed.
// The signal is sent once the child is observed past start-up (its data
// boundary warning is printed just before the lock is taken).
func TestSkillInstallSIGTERMWhileWaitingForLock(t *testing.T) {
	t.Parallel()
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
	c.Env = childEnv("HOME=" + t.TempDir())
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

// TestSkillPackSIGTERMLeavesNothing: SIGTERM during skill pack stops it
// with the cancellation and leaves no temporary file, archive or sidecar.
// The child cannot finish first: its stderr is a pipe the test filled, so
// its first warning (the skipped .DS_Store, printed after the temporary
// archive is created and before any content is packed) blocks until the
// test drains the pipe, which it does only after the signal. The signal
// is sent once inotify reports the temporary file (no fixed sleep).
func TestSkillPackSIGTERMLeavesNothing(t *testing.T) {
	src := filepath.Join(t.TempDir(), "minimal")
	os.MkdirAll(src, 0o755)
	skillMD, err := os.ReadFile(filepath.Join("..", "testdata", "skill", "lockhash", "minimal", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "SKILL.md"), skillMD, 0o644)
	os.WriteFile(filepath.Join(src, ".DS_Store"), []byte("skipped"), 0o644)
	outDir := t.TempDir()

	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	inf := os.NewFile(uintptr(in), "inotify")
	defer inf.Close()
	if _, err := unix.InotifyAddWatch(in, outDir, unix.IN_CREATE); err != nil {
		t.Fatal(err)
	}

	// A pipe for the child's stderr, filled to capacity.
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(p[1], true)
	fill := make([]byte, 4096)
	for {
		if _, err := unix.Write(p[1], fill); err != nil {
			if !errors.Is(err, unix.EAGAIN) {
				t.Fatal(err)
			}
			break
		}
	}
	unix.SetNonblock(p[1], false)
	errR, errW := os.NewFile(uintptr(p[0]), "stderr-r"), os.NewFile(uintptr(p[1]), "stderr-w")
	defer errR.Close()

	c := exec.Command("openadapt-agent", "skill", "pack", src, "-o", filepath.Join(outDir, "x.skill"))
	c.Env = childEnv("HOME=" + t.TempDir())
	c.Stderr = errW
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	created := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		n, err := inf.Read(buf)
		if err != nil || n < unix.SizeofInotifyEvent {
			created <- ""
			return
		}
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		name := buf[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+int(ev.Len)]
		created <- strings.TrimRight(string(name), "\x00")
	}()
	select {
	case name := <-created:
		if !strings.HasPrefix(name, ".x.skill.tmp-") {
			c.Process.Kill()
			t.Fatalf("first file created: %q", name)
		}
	case <-time.After(30 * time.Second): // a safety net, not a timing assertion
		c.Process.Kill()
		t.Fatal("pack never created its temporary file")
	}
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	var stderr []byte
	go func() {
		stderr, _ = io.ReadAll(errR)
		done <- c.Wait()
	}()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatal("pack ignored SIGTERM")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1", err)
	}
	// The cancellation surfaces wherever the pack was (before packing, or
	// wrapped by the read of a file).
	if tail := string(stderr[len(stderr)-min(len(stderr), 512):]); !regexp.MustCompile(`openadapt-agent: error: skill pack: (.*: )?context canceled\n$`).MatchString(tail) {
		t.Fatalf("stderr tail %q: want the cancellation", tail)
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Fatalf("left %d entries (%s…) in the output folder", len(ents), ents[0].Name())
	}
}
