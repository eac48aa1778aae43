package flowhelper

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// MaxFrame is the largest frame in either direction, excluding the newline
// (docs/helper.md, "Wire protocol").
const MaxFrame = 65536

// MaxInFlight is the number of requests Go keeps in flight (docs/helper.md,
// "Concurrency and deadlines").
const MaxInFlight = 8

// testOnlySemWaitHook, set only by tests, is called when a request finds all
// MaxInFlight slots taken and waits.
var testOnlySemWaitHook func(op string, fields any)

// exitDrain bounds how long frames written before the helper's exit are
// still read once cmd.Wait has returned.
const exitDrain = 500 * time.Millisecond

// markerVar is dropped from the helper's environment: Flow would write
// delivery markers to fd 3, which is the null device here.
const markerVar = "OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED"

// Timeouts are the Go deadlines of each op (docs/helper.md, "Concurrency
// and deadlines"); a zero field takes the default.
// Expiry kills the helper. Tests shorten them; operators never need to.
type Timeouts struct {
	Hello, ServiceOpen, ActLive, ActAudit, Replay, Tutorial, Probe, Check, Close time.Duration
	// Write bounds one frame write (default 5 s; a timeout = dead helper).
	Write time.Duration
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.Hello, 60*time.Second)
	def(&t.ServiceOpen, 60*time.Second)
	def(&t.ActLive, 330*time.Second)
	def(&t.ActAudit, 60*time.Second)
	def(&t.Replay, 30*time.Second)
	def(&t.Tutorial, 600*time.Second)
	def(&t.Probe, 30*time.Second)
	def(&t.Check, 30*time.Second)
	def(&t.Close, 3*time.Second)
	def(&t.Write, 5*time.Second)
	return t
}

// Config starts one helper.
type Config struct {
	// Interpreter runs the program (see [FindPython]).
	Interpreter Interpreter
	// StateDir is <runs-dir>/.openadapt-agent: the program is staged in
	// tmp/helper-<Instance>/ and the protected log is
	// logs/helper-<Instance>.log.
	StateDir string
	// Instance is the owner id of this server (or a fresh one per command).
	Instance string
	// Env is the child environment, normally flowrun.ChildEnv(os.Environ(),
	// passEnv); OPENADAPT_SYNTHETIC_DELIVERY_MARKER_ENABLED is removed
	// here and nothing is added.
	Env []string
	// Dir is the working directory ("" = the server's).
	Dir string
	// Operator, when not "", must equal hello's operator (attended mode);
	// a difference fails startup with [MsgOperator].
	Operator string
	// Mirror, when not nil (--allow-protected-export), also receives every
	// helper output line prefixed "flow-helper: ".
	Mirror io.Writer
	// OnDead, when set, is called once (on its own goroutine) when the
	// helper is found dead other than through Close.
	OnDead func()
	// Timeouts overrides the deadlines.
	Timeouts Timeouts
}

// Helper is one running helper. Its methods are safe for concurrent use.
type Helper struct {
	cfg   Config
	to    Timeouts
	cmd   *exec.Cmd
	group procgroup.Group
	reqW  *os.File
	respR *os.File
	outR  *os.File
	dir   string
	log   *helperLog
	// LogPath is the protected local log.
	LogPath string
	hello   Hello

	sem      chan struct{}
	writeMu  sync.Mutex
	mu       sync.Mutex
	nextID   int64
	pending  map[int64]*call
	dead     bool
	deadErr  error
	closing  bool
	done     chan struct{}
	waitDone chan struct{}
	closeOne sync.Once
	closeErr error
	closeRes CloseResult
}

type call struct {
	op       string
	written  bool
	ch       chan reply
	progress func(object)
}

type reply struct {
	result object
	err    error
}

// Start stages the program, spawns it (docs/helper.md, "Process model")
// and completes hello. Most callers want [Launch], which also finds the
// interpreter and builds the environment. Failures are [*StartError]s carrying the exact
// operator message; the helper is stopped before Start returns.
func Start(ctx context.Context, cfg Config) (*Helper, error) {
	interp := cfg.Interpreter.Path
	if interp == "" || !filepath.IsAbs(interp) {
		return nil, startedWith(interp, errors.New("the interpreter path must be absolute"))
	}
	dir, err := stage(cfg.StateDir, cfg.Instance)
	if err != nil {
		return nil, startedWith(interp, fmt.Errorf("staging the helper program: %w", err))
	}
	h := &Helper{cfg: cfg, to: cfg.Timeouts.withDefaults(), dir: dir,
		sem: make(chan struct{}, MaxInFlight), pending: map[int64]*call{},
		done: make(chan struct{}), waitDone: make(chan struct{})}
	lg, lp, err := openLog(cfg.StateDir, cfg.Instance, cfg.Mirror)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, startedWith(interp, fmt.Errorf("opening the helper log: %w", err))
	}
	h.log, h.LogPath = lg, lp
	if err := h.spawn(); err != nil {
		h.log.close()
		_ = os.RemoveAll(dir)
		return nil, startedWith(interp, err)
	}
	if err := h.doHello(ctx); err != nil {
		h.abort()
		return nil, err
	}
	return h, nil
}

func (h *Helper) spawn() error {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		respR.Close()
		respW.Close()
		return err
	}
	args := []string{}
	if h.cfg.Interpreter.Arg != "" {
		args = append(args, h.cfg.Interpreter.Arg)
	}
	args = append(args, "-B", filepath.Join(h.dir, ProgramName))
	cmd := exec.Command(h.cfg.Interpreter.Path)
	args = append(args, prepare(cmd, devnull, reqR, respW)...)
	cmd.Args = append([]string{h.cfg.Interpreter.Path}, args...)
	cmd.Env = childEnv(h.cfg.Env)
	cmd.Dir = h.cfg.Dir
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = outW
	cmd.Stderr = outW
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	outW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		outR.Close()
		return err
	}
	h.cmd, h.reqW, h.respR, h.outR = cmd, reqW, respR, outR
	h.group = procgroup.New(cmd.Process)
	go h.log.drain(outR)
	readerDone := make(chan struct{})
	go func() { h.readLoop(); close(readerDone) }()
	go func() {
		_ = cmd.Wait()
		close(h.waitDone)
		// Frames the helper wrote before exiting are still in the pipe:
		// let the reader deliver them, unless a leaked grandchild holds
		// fd 5 open (then the exit alone means dead).
		select {
		case <-readerDone:
		case <-time.After(exitDrain):
		}
		h.die(fmt.Errorf("%w: the helper process exited", ErrDead))
	}()
	return nil
}

// childEnv is env minus the synthetic delivery marker; never nil.
func childEnv(env []string) []string { return flowrun.EnvWithout(env, markerVar) }

// Hello returns the helper's hello answer.
func (h *Helper) Hello() Hello { return h.hello }

// Done is closed when the helper is dead or closed.
func (h *Helper) Done() <-chan struct{} { return h.done }

// Alive reports whether the helper can take requests.
func (h *Helper) Alive() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.dead && !h.closing
}

// Operator is the local operator identity the helper was started with
// ([Config].Operator, which hello confirmed), or "".
func (h *Helper) Operator() string { return h.cfg.Operator }

// Interpreter is the interpreter the helper runs on.
func (h *Helper) Interpreter() Interpreter { return h.cfg.Interpreter }

// Env is the environment the helper was started with ([Config].Env): the
// one a run command of the same Flow gets.
func (h *Helper) Env() []string { return h.cfg.Env }

// PID is the helper's process id.
func (h *Helper) PID() int { return h.cmd.Process.Pid }

// Log appends one line to the protected local log (and the mirror).
func (h *Helper) Log(line string) { h.log.line(line) }

// die marks the helper dead once: SIGKILL the group, fail every in-flight
// request with a TransportError carrying whether its frame was written.
func (h *Helper) die(cause error) {
	h.mu.Lock()
	if h.dead {
		h.mu.Unlock()
		return
	}
	h.dead = true
	h.deadErr = cause
	closing := h.closing
	// Whether each frame was written is read here, under h.mu: a call
	// marks it under h.mu and never writes once the helper is dead.
	type failed struct {
		c       *call
		written bool
	}
	var pend []failed
	for _, c := range h.pending {
		pend = append(pend, failed{c, c.written})
	}
	h.pending = map[int64]*call{}
	h.mu.Unlock()
	if h.cmd != nil {
		h.group.Kill()
	}
	for _, f := range pend {
		f.c.ch <- reply{err: &TransportError{Op: f.c.op, Written: f.written, Err: cause}}
	}
	close(h.done)
	if !closing && h.cfg.OnDead != nil {
		go h.cfg.OnDead()
	}
}

// abort kills a helper that failed startup and cleans up.
func (h *Helper) abort() {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.die(fmt.Errorf("%w: startup failed", ErrDead))
	h.reap(3 * time.Second)
	h.cleanup()
}

func (h *Helper) reap(wait time.Duration) {
	select {
	case <-h.waitDone:
	case <-time.After(wait):
		h.group.Kill()
		<-h.waitDone
	}
	// Grandchildren (Chromium, the node driver) may survive their leader.
	h.group.Kill()
}

func (h *Helper) cleanup() {
	if h.reqW != nil {
		h.reqW.Close()
	}
	if h.respR != nil {
		h.respR.Close()
	}
	if h.outR != nil {
		h.outR.Close() // a leaked grandchild must not keep the drain alive
	}
	h.group.Close()
	h.log.close()
	_ = os.RemoveAll(h.dir)
}

// readLoop reads response frames from fd 5. Anything but a valid frame
// for a pending id means a dead helper (docs/helper.md, "Death, no
// restart").
func (h *Helper) readLoop() {
	br := bufio.NewReaderSize(h.respR, MaxFrame+1)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			h.die(fmt.Errorf("%w: oversize frame", ErrDead))
			return
		}
		if err != nil {
			h.die(fmt.Errorf("%w: the response pipe closed", ErrDead))
			return
		}
		if err := h.dispatchFrame(line[:len(line)-1]); err != nil {
			h.die(fmt.Errorf("%w: %v", ErrDead, err))
			return
		}
	}
}

// dispatchFrame checks one response frame and hands it to its call. line
// is the reader's buffer: the frame is parsed over a copy, which its
// objects keep.
func (h *Helper) dispatchFrame(line []byte) error {
	obj, err := parseObject(bytes.Clone(line))
	if err != nil {
		return fmt.Errorf("bad frame: %v", err)
	}
	if !obj.has("id") {
		return errors.New("frame without id")
	}
	id, err := frameID(obj)
	if err != nil {
		return err
	}
	if obj.has("progress") {
		// The one sanctioned unsolicited frame: {"id":N,"progress":{…}}.
		if !obj.closed("id", "progress") && !obj.closed("v", "id", "progress") {
			return errors.New("bad progress frame")
		}
		p, ok := obj.sub("progress")
		if !ok {
			return errors.New("bad progress frame")
		}
		h.mu.Lock()
		c := h.pending[id]
		h.mu.Unlock()
		if c == nil || c.progress == nil {
			return errors.New("unexpected progress frame")
		}
		c.progress(p)
		return nil
	}
	if string(obj.d.Raw(obj.get("v"))) != "1" {
		return errors.New("bad frame version")
	}
	ok, _ := obj.boolean("ok")
	var r reply
	switch {
	case obj.closed("v", "id", "ok", "result") && ok:
		res, isObj := obj.sub("result")
		if !isObj {
			return errors.New("result is not an object")
		}
		r.result = res
	case obj.closed("v", "id", "ok", "error") && obj.d.False(obj.get("ok")):
		eo, isObj := obj.sub("error")
		if !isObj {
			return errors.New("bad error object")
		}
		e, err := decodeError(eo)
		if err != nil {
			return err
		}
		r.err = e
	default:
		return errors.New("bad response frame")
	}
	h.mu.Lock()
	c := h.pending[id]
	delete(h.pending, id)
	h.mu.Unlock()
	if c == nil {
		return errors.New("unknown or duplicate response id")
	}
	c.ch <- r
	return nil
}

// frameID reads the frame's id: null (the helper refused the frame) or a
// positive integer below 2^53.
func frameID(obj object) (int64, error) {
	v := obj.get("id")
	if obj.d.Kind(v) == pyjson.Null {
		return 0, errors.New("the helper refused a frame")
	}
	if !obj.d.IsInt(v) {
		return 0, errors.New("bad response id")
	}
	n, err := strconv.ParseInt(string(obj.d.Raw(v)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<53 {
		return 0, errors.New("bad response id")
	}
	return n, nil
}

var knownKinds = map[string]bool{KindRefused: true, KindBusy: true, KindInvalid: true, KindUnavailable: true, KindUncertain: true, KindInternal: true}

var knownReasons = map[string]bool{}

func init() {
	for _, r := range strings.Fields(`hello_required bad_frame frame_too_large bad_request unknown_op closing
		flow_not_importable flow_version_unsupported already_open deployment_config deployment_unusable
		executor_timeout live_session not_open operator_blank operator_mismatch attention_not_found
		no_prior_decision journal_in_flight pause_delivery_unresolved journal_unreadable tutorial_failed
		authoring_unavailable`) {
		knownReasons[r] = true
	}
}

// decodeError checks the closed error object (docs/helper.md, "Error
// model").
func decodeError(obj object) (*Error, error) {
	if !obj.closed("kind", "reason", "flow_type", "mro", "dispatched") {
		return nil, errors.New("bad error object")
	}
	e := &Error{}
	var ok, isStr bool
	if e.Kind, ok = obj.str("kind"); !ok || !knownKinds[e.Kind] {
		return nil, errors.New("bad error kind")
	}
	if e.Reason, isStr, ok = obj.strOrNull("reason"); !ok || (isStr && !knownReasons[e.Reason]) {
		return nil, errors.New("bad error reason")
	}
	if e.FlowType, _, ok = obj.strOrNull("flow_type"); !ok || len(e.FlowType) > 512 {
		return nil, errors.New("bad error flow_type")
	}
	d, mro := obj.d, obj.get("mro")
	if d.Kind(mro) != pyjson.Array || d.Len(mro) > 16 {
		return nil, errors.New("bad error mro")
	}
	e.MRO = make([]string, 0, d.Len(mro))
	for v := range d.Elems(mro) {
		if d.Kind(v) != pyjson.String {
			return nil, errors.New("bad error mro")
		}
		e.MRO = append(e.MRO, d.Str(v))
	}
	if e.Dispatched, ok = obj.boolean("dispatched"); !ok {
		return nil, errors.New("bad error dispatched")
	}
	return e, nil
}

// call sends one request and waits for its reply, its deadline or the
// helper's death. fields is a JSON-object-marshalling value (nil = no
// fields). MCP cancellation is not forwarded: ctx only stops waiting for a
// free slot before anything is written.
func (h *Helper) call(ctx context.Context, op string, fields any, deadline time.Duration, progress func(object)) (object, error) {
	body := []byte("{}")
	if fields != nil {
		var err error
		if body, err = json.Marshal(fields); err != nil {
			return object{}, fmt.Errorf("flow helper %s: encoding the request: %w", op, err)
		}
	}
	if len(body) < 2 || body[0] != '{' {
		return object{}, fmt.Errorf("flow helper %s: request fields are not an object", op)
	}
	select {
	case h.sem <- struct{}{}:
	default:
		// Every slot is taken: wait for one.
		if testOnlySemWaitHook != nil {
			testOnlySemWaitHook(op, fields)
		}
		select {
		case h.sem <- struct{}{}:
		case <-h.done:
			return object{}, h.deadError(op)
		case <-ctx.Done():
			return object{}, ctx.Err()
		}
	}
	defer func() { <-h.sem }()

	c := &call{op: op, ch: make(chan reply, 1), progress: progress}
	h.mu.Lock()
	if h.dead {
		h.mu.Unlock()
		return object{}, h.deadError(op)
	}
	if h.closing && op != "close" {
		h.mu.Unlock()
		return object{}, &TransportError{Op: op, Err: fmt.Errorf("%w: closing", ErrDead)}
	}
	h.nextID++
	id := h.nextID
	var frame bytes.Buffer
	fmt.Fprintf(&frame, `{"v":1,"id":%d,"op":%q`, id, op)
	if len(body) > 2 {
		frame.WriteByte(',')
		frame.Write(body[1:])
	} else {
		frame.WriteByte('}')
	}
	if frame.Len() > MaxFrame {
		h.mu.Unlock()
		return object{}, fmt.Errorf("flow helper %s: request frame too large", op)
	}
	frame.WriteByte('\n')
	h.pending[id] = c
	h.mu.Unlock()

	h.writeMu.Lock()
	h.mu.Lock()
	if h.dead {
		// die answered this call (not written) while it waited to write.
		h.mu.Unlock()
		h.writeMu.Unlock()
		r := <-c.ch
		return r.result, r.err
	}
	c.written = true // even a partly written frame may have been acted on
	h.mu.Unlock()
	_ = h.reqW.SetWriteDeadline(time.Now().Add(h.to.Write))
	_, werr := h.reqW.Write(frame.Bytes())
	h.writeMu.Unlock()
	if werr != nil {
		h.die(fmt.Errorf("%w: writing a request: %v", ErrDead, werr))
	}
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	select {
	case r := <-c.ch:
		return r.result, r.err
	case <-timer.C:
		if op == "close" {
			// Close escalates to SIGTERM, then SIGKILL, itself.
			h.mu.Lock()
			delete(h.pending, id)
			h.mu.Unlock()
			return object{}, &TransportError{Op: op, Written: true, Err: ErrDeadline}
		}
		h.die(ErrDeadline)
		r := <-c.ch
		return r.result, r.err
	}
}

func (h *Helper) deadError(op string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.deadErr
	if err == nil {
		err = ErrDead
	}
	return &TransportError{Op: op, Written: false, Err: err}
}

// badResult kills the helper when a result fails its closed schema
// (schemas are closed both ways: a bad result is a dead helper).
func (h *Helper) badResult(op string, err error) error {
	cause := fmt.Errorf("%w: %s result failed its schema: %v", ErrDead, op, err)
	h.die(cause)
	return &TransportError{Op: op, Written: true, Err: cause}
}

// CloseResult is close's answer.
type CloseResult struct {
	ServiceClosed  bool
	MockmedStopped bool
}

// Close shuts the helper down (docs/helper.md, "Shutdown"): close {drain_s:1},
// close fd 4, wait ≤ 3 s for the reply or exit, then SIGTERM the group and
// SIGKILL it 1 s later; reap; remove the private directory. Safe to call
// more than once and after death.
func (h *Helper) Close() (CloseResult, error) {
	h.closeOne.Do(func() {
		h.mu.Lock()
		wasDead := h.dead
		h.mu.Unlock()
		if !wasDead {
			// One 3 s budget covers the reply and the exit.
			budget := time.NewTimer(h.to.Close)
			defer budget.Stop()
			closeDone := make(chan struct{})
			go func() {
				defer close(closeDone)
				h.mu.Lock()
				h.closing = true
				h.mu.Unlock()
				res, err := h.call(context.Background(), "close", map[string]any{"drain_s": 1}, h.to.Close, nil)
				if err != nil {
					h.closeErr = err
					return
				}
				sc, ok1 := res.boolean("service_closed")
				ms, ok2 := res.boolean("mockmed_stopped")
				if !res.closed("service_closed", "mockmed_stopped") || !ok1 || !ok2 {
					h.closeErr = errors.New("flow helper close: bad result")
					return
				}
				h.closeRes = CloseResult{sc, ms}
			}()
			// Close fd 4 once the close frame is out (or at once if it
			// cannot be written): EOF is the helper's second close signal.
			<-closeDone
			h.writeMu.Lock()
			h.reqW.Close()
			h.writeMu.Unlock()
			select {
			case <-h.waitDone:
			case <-budget.C:
			}
		} else {
			h.mu.Lock()
			h.closing = true
			h.mu.Unlock()
		}
		select {
		case <-h.waitDone:
		default:
			h.group.Term()
			select {
			case <-h.waitDone:
			case <-time.After(time.Second):
				h.group.Kill()
				<-h.waitDone
			}
		}
		h.group.Kill()
		h.die(fmt.Errorf("%w: closed", ErrDead))
		h.cleanup()
	})
	return h.closeRes, h.closeErr
}
