package flowrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
)

// Default limits of a Flow child process.
const (
	// DefaultTimeout is the per-call timeout of a run (600 s).
	DefaultTimeout = 600 * time.Second
	// DefaultTimeoutGrace is how long a timed-out group gets between SIGTERM
	// and SIGKILL: SIGTERM to the process group, 5 s, then SIGKILL to the
	// group (docs/runs.md, "Process group, timeout, cancellation").
	DefaultTimeoutGrace = 5 * time.Second
	// DefaultCancelGrace is the grace on cancellation, which is server
	// shutdown: SIGKILL after a 2 s grace (docs/mcp.md, "Shutdown").
	DefaultCancelGrace = 2 * time.Second
	// TailChars is how many trailing characters of stdout and of stderr are
	// kept: only the last 4000 characters of each.
	TailChars = 4000
	// StderrKeepBytes is how many trailing bytes of stderr are kept for the
	// local operator ([Exit.StderrKept], serve's <state>/runs/<id>.stderr).
	// The same capture feeds the
	// [TailChars] tail, so stderr is drained once.
	StderrKeepBytes = 64 << 10
)

// pipeDrainLimit bounds how long Exec waits for stdout/stderr EOF after the
// whole group is gone (a process that escaped the group may hold a pipe).
const pipeDrainLimit = 2 * time.Second

// Process identifies a started Flow child. It is the leader of its own
// process group, so PGID == PID on Unix.
type Process struct {
	PID  int
	PGID int
	// StartTime is the leader's start time in clock ticks since boot
	// (/proc/<pid>/stat field 22) on Linux, 0 elsewhere. Together with PGID
	// it lets a later server check that a recorded group is still this run's
	// before terminating it ([TerminateOrphan]).
	StartTime uint64
}

// Command is one Flow child process to run with [Exec].
type Command struct {
	// Args is the full argv. Args[0] is a path, or a name looked up in the
	// server's PATH. Required.
	Args []string
	// Env is the complete child environment ([ChildEnv]). nil means an
	// empty environment, never the inherited one.
	Env []string
	// Dir is the working directory; "" inherits the server's.
	Dir string
	// Timeout kills the group after this long; 0 means [DefaultTimeout],
	// a negative value means no timeout.
	Timeout time.Duration
	// TimeoutGrace is the SIGTERM→SIGKILL grace on timeout; 0 means
	// [DefaultTimeoutGrace].
	TimeoutGrace time.Duration
	// CancelGrace is the SIGTERM→SIGKILL grace when ctx is done (and for
	// stragglers left in the group after a normal exit); 0 means
	// [DefaultCancelGrace].
	CancelGrace time.Duration
	// Stdout, if set, also receives everything the child writes to its
	// stdout, as it is drained (the run's failed-check scanner); it must
	// not block.
	Stdout io.Writer
	// Started, if set, is called once, right after the spawn, before
	// Exec waits. The run manager records the process there. Output is
	// already being drained; the timeout is measured from its return.
	Started func(Process)
}

// Exit is what happened to a [Command].
type Exit struct {
	// Err is set when the process could not be started (wrapping
	// [ErrSpawn]) or the command was invalid; nothing ran then.
	Err error
	// TimedOut: the timeout fired and the group was killed. Code is then
	// meaningless and no report may be trusted.
	TimedOut bool
	// Canceled: ctx was done and the group was killed.
	Canceled bool
	// Code is the exit status when the leader exited by itself: 0–255, or
	// the negative signal number when a signal it did not get from Exec
	// killed it (as Python's returncode). -1 when it did not exit by itself.
	Code int
	// Stdout and Stderr are the last [TailChars] characters of each stream
	// (protected: they stay on the machine).
	Stdout, Stderr string
	// StderrKept is the last [StderrKeepBytes] bytes of stderr, starting at
	// a character boundary when the window cut one (protected).
	StderrKept     []byte
	Process        Process
	Started, Ended time.Time
}

// Exec starts c in a new process group with an empty stdin (the null
// device; under MCP stdio the server's stdin is the JSON-RPC stream) and
// waits for it. Output is drained into bounded tails, so any amount of
// output uses constant memory.
//
// On timeout, Exec sends SIGTERM to the whole group, waits until the group is
// empty or the grace has passed, then sends SIGKILL to the group (Flow starts
// a browser; killing the leader alone would orphan it). When ctx is done it
// does the same with the cancel grace. After a normal exit, processes left in
// the group are terminated the same way, so a run never leaves orphans. On
// Windows the group is a job object with kill-on-close: terminating it ends
// every process of the run, and so does the server's death.
func Exec(ctx context.Context, c Command) Exit {
	ex := Exit{Code: -1}
	if len(c.Args) == 0 || c.Args[0] == "" {
		ex.Err = ErrEmptyCommand
		return ex
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.TimeoutGrace <= 0 {
		c.TimeoutGrace = DefaultTimeoutGrace
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if err := ctx.Err(); err != nil {
		ex.Canceled = true
		ex.Err = fmt.Errorf("%w: canceled before start", ErrSpawn)
		return ex
	}

	cmd := exec.Command(c.Args[0], c.Args[1:]...)
	cmd.Env = c.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Dir = c.Dir
	cmd.Stdin = nil // the null device
	cmd.SysProcAttr = procgroup.SysProcAttr()

	outR, outW, err := os.Pipe()
	if err != nil {
		ex.Err = fmt.Errorf("%w: %w", ErrSpawn, err)
		return ex
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		ex.Err = fmt.Errorf("%w: %w", ErrSpawn, err)
		return ex
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	ex.Started = time.Now()
	err = cmd.Start()
	// The child holds its own copies of the write ends now.
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		ex.Err = fmt.Errorf("%w: %w", ErrSpawn, err)
		ex.Ended = time.Now()
		return ex
	}
	pid := cmd.Process.Pid
	ex.Process = Process{PID: pid, PGID: pid, StartTime: procgroup.StartTime(pid)}
	group := procgroup.New(cmd.Process)
	defer group.Close()

	var outTail tail
	errTail := tail{max: StderrKeepBytes}
	var drain sync.WaitGroup
	drain.Add(2)
	var outSink io.Writer = &outTail
	if c.Stdout != nil {
		outSink = io.MultiWriter(&outTail, c.Stdout)
	}
	go func() { defer drain.Done(); _, _ = io.Copy(outSink, outR) }()
	go func() { defer drain.Done(); _, _ = io.Copy(&errTail, errR) }()

	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()
	if c.Started != nil {
		// The output is already being drained, so a slow callback (the
		// run record's fsync) never stalls Flow on a full pipe.
		c.Started(ex.Process)
	}

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-waitDone:
		// Normal exit: clear out anything left in the group.
		terminateGroup(group, c.CancelGrace, nil)
	case <-timeout:
		ex.TimedOut = true
		waitErr = terminateGroup(group, c.TimeoutGrace, waitDone)
	case <-ctx.Done():
		ex.Canceled = true
		waitErr = terminateGroup(group, c.CancelGrace, waitDone)
	}

	// Every process of the group is gone, so the pipes reach EOF unless a
	// process escaped the group; bound the wait and cut the pipes then.
	drained := make(chan struct{})
	go func() { drain.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(pipeDrainLimit):
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
	ex.Stdout, ex.Stderr = outTail.String(), errTail.String()
	ex.StderrKept = errTail.Bytes()
	ex.Ended = time.Now()
	if !ex.TimedOut && !ex.Canceled {
		ex.Code = exitCode(waitErr, cmd.ProcessState)
	}
	return ex
}

// terminateGroup ends a process group: SIGTERM, then wait until the leader
// has been reaped and no live process is left in the group, or grace has
// passed, then SIGKILL. When waitDone is nil the leader has already been
// reaped. It returns the leader's wait error.
func terminateGroup(g procgroup.Group, grace time.Duration, waitDone <-chan error) error {
	var waitErr error
	if waitDone == nil && !g.Live() {
		return nil
	}
	g.Term()
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case err, ok := <-waitDone:
			if ok {
				waitErr = err
			}
			waitDone = nil
			if !g.Live() {
				return waitErr
			}
		case <-tick.C:
			if waitDone == nil && !g.Live() {
				return waitErr
			}
		case <-deadline.C:
			break wait
		}
	}
	g.Kill()
	if waitDone != nil {
		waitErr = <-waitDone
	}
	return waitErr
}

// exitCode maps a wait result to a code: the exit status, or the negative
// signal number.
func exitCode(err error, st *os.ProcessState) int {
	if st == nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			st = ee.ProcessState
		}
	}
	if st == nil {
		return -1
	}
	if sig, ok := procgroup.Signaled(st); ok {
		return -sig
	}
	return st.ExitCode()
}

// tail keeps the last bytes written to it: max bytes, or by default enough
// for TailChars characters of UTF-8 (4 bytes each). Memory stays constant
// (at most 2×max) whatever the output size.
type tail struct {
	mu  sync.Mutex
	max int // 0 means tailBytes
	buf []byte
}

const tailBytes = TailChars * utf8.UTFMax

func (t *tail) limit() int {
	if t.max <= 0 {
		return tailBytes
	}
	return t.max
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, lim := len(p), t.limit()
	if len(p) >= lim {
		t.buf = append(t.buf[:0], p[len(p)-lim:]...)
		return n, nil
	}
	if len(t.buf)+len(p) > 2*lim {
		keep := lim - len(p)
		copy(t.buf, t.buf[len(t.buf)-keep:])
		t.buf = t.buf[:keep]
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the last TailChars characters of the kept window (the
// default window of tailBytes always holds that many). A multi-byte
// character cut at the start of the window is dropped; invalid bytes count
// as one character each.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return lastChars(t.window(), TailChars)
}

// Bytes returns a copy of the last max bytes, without the continuation
// bytes of a character the window cut at its start (at most three).
func (t *tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.window()
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return append([]byte{}, b...)
}

// window is the last max bytes of buf; t.mu is held.
func (t *tail) window() []byte {
	if lim := t.limit(); len(t.buf) > lim {
		return t.buf[len(t.buf)-lim:]
	}
	return t.buf
}

func lastChars(b []byte, n int) string {
	i := len(b)
	for count := 0; i > 0 && count < n; count++ {
		_, size := utf8.DecodeLastRune(b[:i])
		i -= size
	}
	// Skip continuation bytes of a character cut by the byte window.
	for i < len(b) && !utf8.RuneStart(b[i]) {
		i++
	}
	return string(b[i:])
}
