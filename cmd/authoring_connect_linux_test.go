//go:build linux

package cmd

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring/mailbox"
	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

// A real process in a new session has no controlling terminal: connect must
// refuse (exit 2) before any request, never assume yes.
func TestAuthoringConnectWithoutControllingTerminal(t *testing.T) {
	t.Parallel()
	srv := fm.New(t)
	cmd := exec.Command("openadapt-agent", "authoring", "connect", srv.Link())
	cmd.Env = append(os.Environ(), mailbox.OriginEnv+"="+srv.Origin())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "controlling terminal") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests were sent", n)
	}
}
