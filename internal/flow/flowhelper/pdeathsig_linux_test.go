package flowhelper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/procwait"
)

// TestPdeathsig: on Linux the helper dies with its
// parent. A child process (this test binary, TestPdeathsigParent) starts
// the fake helper and is SIGKILLed, so no Close runs; the kernel's
// Pdeathsig must deliver SIGTERM to the helper, which records it and exits.
func TestPdeathsig(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, "record")
	os.Mkdir(record, 0o700)
	parent := exec.Command(os.Args[0], "-test.run=^TestPdeathsigParent$")
	parent.Env = append(os.Environ(), "FLOWHELPER_PDEATHSIG_DIR="+dir, "FLOWHELPER_PDEATHSIG_PYTHON="+fakehelper.Install(t),
		"OPENADAPT_FAKE_HELPER_RECORD="+record, "OPENADAPT_FAKE_HELPER_MODE=eof-waits-for-signal")
	parent.Stderr = os.Stderr
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "helper "))
	if err != nil || perr != nil {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		t.Fatalf("parent said %q: %v %v", line, err, perr)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if !procwait.Exit(pid, 20*time.Second) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		t.Fatalf("the helper %d outlived its SIGKILLed parent", pid)
	}
	data, err := os.ReadFile(filepath.Join(record, "signals.jsonl"))
	if err != nil {
		t.Fatalf("the helper recorded no signal: %v", err)
	}
	var sig struct{ Signal string }
	if json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &sig) != nil || sig.Signal != syscall.SIGTERM.String() {
		t.Fatalf("signals %q", data)
	}
}

// TestPdeathsigParent is TestPdeathsig's child: it starts the helper,
// prints its pid and waits to be killed.
func TestPdeathsigParent(t *testing.T) {
	dir := os.Getenv("FLOWHELPER_PDEATHSIG_DIR")
	if dir == "" {
		t.Skip("the child of TestPdeathsig")
	}
	op, _ := flowhelper.Operator()
	h, err := flowhelper.Start(context.Background(), flowhelper.Config{
		Interpreter: flowhelper.Interpreter{Path: os.Getenv("FLOWHELPER_PDEATHSIG_PYTHON")},
		StateDir:    filepath.Join(dir, "state"), Instance: "pdeathsig", Env: flowrun.ChildEnv(os.Environ(), nil), Operator: op})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("helper %d\n", h.PID())
	<-h.Done() // killed by the test before this returns
}
