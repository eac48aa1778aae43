//go:build linux

package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring/mailbox"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/authoringstub"
	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/ptytest"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/realflow"
)

// ttyConnect is `openadapt-agent authoring connect` run as a real child
// process whose controlling terminal is a pseudo-terminal: /dev/tty is real,
// so the terminal check passes and the Allow prompt is asked there.
type ttyConnect struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	master         *os.File
	mu             sync.Mutex
	screen         bytes.Buffer  // what the child wrote to the terminal
	changed        chan struct{} // signalled on every terminal write
	readDone       chan struct{}
}

func startTTYConnect(t *testing.T, env []string, args ...string) *ttyConnect {
	t.Helper()
	master, slave := ptytest.Open(t)
	c := &ttyConnect{master: master, changed: make(chan struct{}, 1), readDone: make(chan struct{})}
	c.cmd = exec.Command("openadapt-agent", append([]string{"authoring", "connect"}, args...)...)
	c.cmd.Env = env
	c.cmd.Stdin = slave
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.SysProcAttr = ptytest.Controlling()
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Only the child holds the slave now: the master reads EIO once it exits.
	slave.Close()
	go func() {
		defer close(c.readDone)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			c.mu.Lock()
			c.screen.Write(buf[:n])
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

// waitScreen waits until the terminal shows want (the bound only stops a
// hang; it is not a timing assertion).
func (c *ttyConnect) waitScreen(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		c.mu.Lock()
		ok := strings.Contains(c.screen.String(), want)
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.changed:
		case <-c.readDone:
			c.mu.Lock()
			defer c.mu.Unlock()
			if !strings.Contains(c.screen.String(), want) {
				t.Fatalf("the terminal never showed %q; it showed %q; stderr:\n%s", want, c.screen.String(), c.stderr.String())
			}
			return
		case <-deadline:
			_ = c.cmd.Process.Kill()
			t.Fatalf("the terminal never showed %q; it showed %q", want, c.screen.String())
		}
	}
}

func (c *ttyConnect) wait(t *testing.T) int {
	t.Helper()
	err := c.cmd.Wait()
	<-c.readDone
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

// The Allow prompt on a real controlling terminal: connect opens /dev/tty,
// asks there, reads the person's "y" and runs the job against the stub of
// Flow's authoring module through the real embedded helper.
func TestAuthoringConnectOnARealTerminal(t *testing.T) {
	st := authoringstub.New(t, "full")
	srv := fm.New(t)
	srv.Poll(
		fm.Command(fm.Envelope("c1", "bind_pack", nil, fm.SubA, nil)),
		fm.Command(fm.Envelope("c2", "observe", nil, fm.SubA, nil)),
	)
	env := append(os.Environ(), st.Vars...)
	env = append(env, mailbox.OriginEnv+"="+srv.Origin(), "XDG_STATE_HOME="+filepath.Join(st.Root, "state"), "TMPDIR="+st.Root)
	c := startTTYConnect(t, env, "--flow-python", st.Python, "--pass-env", "PYTHONPATH", "--url", "https://app.example/login", "--headed", srv.Link())
	c.waitScreen(t, "Allow ChatGPT to drive this job? [y/N]")
	if _, err := io.WriteString(c.master, "y\n"); err != nil {
		t.Fatal(err)
	}
	if code := c.wait(t); code != 0 || c.stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, c.stdout.String(), c.stderr.String())
	}
	var statuses []string
	for _, r := range srv.Of("callback") {
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		statuses = append(statuses, fmt.Sprint(m["command_id"], " ", m["status"]))
	}
	if got := strings.Join(statuses, ","); got != "c1 done,c2 done,<nil> halted" {
		t.Errorf("callbacks %s", got)
	}
	if n := len(srv.Of("allow")); n != 1 {
		t.Errorf("%d allow calls", n)
	}
	if got := st.CallNames(t); got != "launch,open,observe,backend_close" {
		t.Errorf("session calls %s", got)
	}
}

var realFlowConnectSkip = realflow.SkipMessage("cmd: real-Flow authoring connect check")

// Against real Flow without openadapt_flow.authoring (1.32), connect on a
// real terminal fails closed: exit 2, the explicit dependency error once on
// stderr, and nothing sent — no claim, so the one-time bind token is not
// spent and there is no callback at all (docs/mailbox.md, "Before the
// claim"). Against a Flow with the module the probe passes and, without
// --config, the local window is refused next, again before anything is
// sent (no browser or desktop is driven here). A session lost mid-job,
// where each command gets the fail-closed error, is
// TestAuthoringConnectStubSessionGone.
func TestRealFlowAuthoringConnectFailsClosed(t *testing.T) {
	rf := realflow.Load(t, realFlowConnectSkip)
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tmp, state := filepath.Join(T, "tmp"), filepath.Join(T, "state")
	for _, d := range []string{tmp, filepath.Join(T, "home")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	srv := fm.New(t)
	env := append(os.Environ(), mailbox.OriginEnv+"="+srv.Origin(), "HOME="+filepath.Join(T, "home"),
		"XDG_STATE_HOME="+state, "TMPDIR="+tmp)
	c := startTTYConnect(t, env, "--flow-python", rf.FlowPython, srv.Link())
	code := c.wait(t)
	stderr := c.stderr.String()
	want := "openadapt_flow.authoring is not available with openadapt-flow " + rf.FlowVersion
	if exec.Command(rf.FlowPython, "-c", "import openadapt_flow.authoring").Run() == nil {
		want = "authoring the local window needs --config"
	}
	if code != 2 || c.stdout.Len() != 0 || strings.Count(stderr, want) != 1 || !strings.Contains(stderr, "nothing was sent and the runner link is still unused") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, c.stdout.String(), stderr)
	}
	t.Logf("exit %d; stderr: %s", code, stderr)
	// The terminal check passed (a real /dev/tty): the refusal is the session's.
	if strings.Contains(stderr, "controlling terminal") {
		t.Fatalf("connect saw no terminal:\n%s", stderr)
	}
	if reqs := srv.Requests(); len(reqs) != 0 {
		t.Fatalf("%d requests reached the mailbox (first %s)", len(reqs), reqs[0].Path)
	}
	for _, secret := range []string{fm.Bind, "oab_"} {
		if strings.Contains(stderr, secret) {
			t.Errorf("stderr holds %q", secret)
		}
	}
	// Nothing left behind: the private helper directory and the empty
	// recording folder are gone.
	if left, _ := filepath.Glob(filepath.Join(tmp, "openadapt-agent-connect-*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if left, _ := os.ReadDir(filepath.Join(state, "openadapt-agent", "authoring")); len(left) != 0 {
		t.Errorf("recording folders left: %d", len(left))
	}
}
