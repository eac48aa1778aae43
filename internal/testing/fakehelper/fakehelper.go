//go:build unix

package fakehelper

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// Name is the fake's executable name.
const Name = "python3"

// RunIfInvoked runs the fake and exits when the current executable was
// started under [Name]. Call it first in TestMain.
func RunIfInvoked() {
	if filepath.Base(os.Args[0]) == Name {
		os.Exit(Main())
	}
}

// Install returns an executable named [Name]: the program [BuildShared]
// built, when the package's TestMain called it, else the test binary in a
// fresh directory of t.TempDir().
func Install(t testing.TB) string {
	t.Helper()
	if shared != "" {
		return shared
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("fakehelper: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "fakehelper-bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, Name)
	if err := os.Symlink(exe, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// shared is the program BuildShared built ("" before, or when it failed).
var shared string

// BuildShared compiles ./internal/testing/fakehelper/cmd/fakehelper once,
// without the race detector, into a fresh temporary directory (as [Name]) and
// returns its path, which [Install] returns from then on; call it from
// TestMain before m.Run and the cleanup after. Every fake helper start is then
// a small program instead of a re-executed race-instrumented test binary. When
// the build fails, Install falls back to the test binary (keep
// [RunIfInvoked]).
func BuildShared() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "fakehelper-")
	if err != nil {
		return "", func() {}, err
	}
	remove := func() { os.RemoveAll(dir) }
	dst := filepath.Join(dir, Name)
	cmd := exec.Command("go", "build", "-o", dst, "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper/cmd/fakehelper")
	// The fake must not inherit the race build of the test command.
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		remove()
		return "", func() {}, fmt.Errorf("fakehelper: go build: %w\n%s", err, out)
	}
	shared = dst
	return dst, func() { shared = ""; remove() }, nil
}

// Rule is one SCRIPT line.
type Rule struct {
	Op      string          `json:"op"`
	Match   map[string]any  `json:"match,omitempty"`
	Reply   json.RawMessage `json:"reply,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
	DelayMS int             `json:"delay_ms,omitempty"`
	Then    string          `json:"then,omitempty"`
	Once    bool            `json:"once,omitempty"`
	// WaitForKey holds the answer until a request with this
	// idempotency_key has been answered (deterministic out-of-order
	// replies without timing).
	WaitForKey string `json:"wait_for_key,omitempty"`
	// Progress lists tutorial.prepare phases sent as progress frames
	// before the answer (docs/helper.md, Wire protocol).
	Progress []string `json:"progress,omitempty"`
	used     bool
}

// WriteScript writes rules as a SCRIPT file and returns its path.
func WriteScript(t testing.TB, rules ...Rule) string {
	t.Helper()
	var b strings.Builder
	for _, r := range rules {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	p := filepath.Join(t.TempDir(), "fakehelper-script.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ErrorFrame builds an error object for a Rule.
func ErrorFrame(kind, reason string, dispatched bool, flowType string, mro ...string) json.RawMessage {
	e := map[string]any{"kind": kind, "reason": nil, "flow_type": nil, "mro": []string{}, "dispatched": dispatched}
	if reason != "" {
		e["reason"] = reason
	}
	if flowType != "" {
		e["flow_type"] = flowType
	}
	if mro != nil {
		e["mro"] = mro
	}
	b, _ := json.Marshal(e)
	return b
}

type fake struct {
	in, out  *os.File
	wmu      sync.Mutex
	rules    []*Rule
	rmu      sync.Mutex
	modes    map[string]string
	record   string
	opened   bool
	decided  map[string]map[string]any // key -> decision
	keyReq   map[string]string         // key -> action|digest
	dmu      sync.Mutex
	wg       sync.WaitGroup
	recordMu sync.Mutex
	answered map[string]chan struct{}
	amu      sync.Mutex
	tutorial tutorialState
}

func (f *fake) answeredCh(key string) chan struct{} {
	f.amu.Lock()
	defer f.amu.Unlock()
	c, ok := f.answered[key]
	if !ok {
		c = make(chan struct{})
		f.answered[key] = c
	}
	return c
}

func (f *fake) markAnswered(req map[string]any) {
	key, ok := req["idempotency_key"].(string)
	if !ok {
		return
	}
	c := f.answeredCh(key)
	f.amu.Lock()
	defer f.amu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// Main is the fake's entry point.
func Main() int {
	// The fd table as inherited, before this Go process opens anything.
	fds := map[string]string{}
	for fd := 0; fd < 10; fd++ {
		fds[strconv.Itoa(fd)] = fdKind(fd)
		// The Go runtime of this fake keeps its cgroup CPU files open
		// (GOMAXPROCS); they are not inherited.
		if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && fd > 5 && strings.HasPrefix(l, "/sys/fs/cgroup/") {
			fds[strconv.Itoa(fd)] = "go-runtime"
		}
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] != "-B" {
		args = args[1:] // shebang ARG
	}
	if len(args) != 6 || args[0] != "-B" || args[2] != "--in-fd" || args[4] != "--out-fd" {
		fmt.Fprintf(os.Stderr, "fakehelper: unexpected argv %q\n", os.Args)
		return 2
	}
	script, err := os.ReadFile(args[1])
	if err != nil || string(script) != string(flowhelper.Program()) {
		fmt.Fprintln(os.Stderr, "fakehelper: the staged script differs from the embedded program")
		return 2
	}
	inFD, _ := strconv.Atoi(args[3])
	outFD, _ := strconv.Atoi(args[5])
	f := &fake{in: os.NewFile(uintptr(inFD), "in"), out: os.NewFile(uintptr(outFD), "out"),
		modes: map[string]string{}, record: os.Getenv("OPENADAPT_FAKE_HELPER_RECORD"),
		decided: map[string]map[string]any{}, keyReq: map[string]string{}, answered: map[string]chan struct{}{}}
	for _, m := range strings.Split(os.Getenv("OPENADAPT_FAKE_HELPER_MODE"), ",") {
		if m == "" {
			continue
		}
		k, v, _ := strings.Cut(m, "=")
		f.modes[k] = v
	}
	if p := os.Getenv("OPENADAPT_FAKE_HELPER_SCRIPT"); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakehelper: script:", err)
			return 2
		}
		for _, line := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			r := &Rule{}
			if err := json.Unmarshal([]byte(line), r); err != nil {
				fmt.Fprintln(os.Stderr, "fakehelper: script:", err)
				return 2
			}
			f.rules = append(f.rules, r)
		}
	}
	f.recordStart(fds)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for s := range sigs {
			f.appendRecord("signals.jsonl", map[string]any{"signal": s.String()})
			if _, ok := f.modes["ignore-term"]; ok {
				continue
			}
			os.Exit(0)
		}
	}()
	if _, ok := f.modes["print-stdout"]; ok {
		fmt.Println("fakehelper: noise on stdout (fd 1 is the stderr pipe)")
	}
	if _, ok := f.modes["leak-pipe"]; ok {
		// A grandchild keeps fd 5 open after this process exits.
		c := exec.Command("sleep", "300")
		c.ExtraFiles = []*os.File{nil, nil, f.out}
		_ = c.Start()
	}
	return f.loop()
}

func (f *fake) loop() int {
	br := bufio.NewReaderSize(f.in, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			f.wg.Wait()
			if _, ok := f.modes["eof-waits-for-signal"]; ok {
				// Parent-death tests: EOF on fd 4 and the parent-death
				// signal arrive together; stay until the signal handler
				// records and exits (bounded).
				time.Sleep(20 * time.Second)
			}
			return 0
		}
		var req map[string]any
		if err := json.Unmarshal(line, &req); err != nil {
			fmt.Fprintln(os.Stderr, "fakehelper: bad request frame")
			return 3
		}
		f.appendRecord("requests.jsonl", req)
		id := req["id"]
		op, _ := req["op"].(string)
		if op == "hello" {
			if _, ok := f.modes["no-hello"]; ok {
				continue
			}
		}
		if op == "close" {
			f.wg.Wait()
			if r := f.rule(op, req); r != nil {
				f.answer(id, r)
				continue
			}
			f.reply(id, map[string]any{"service_closed": f.opened, "mockmed_stopped": f.mockmedUp()})
			return 0
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.markAnswered(req)
			if r := f.rule(op, req); r != nil {
				if r.WaitForKey != "" {
					<-f.answeredCh(r.WaitForKey)
				}
				f.answer(id, r)
				return
			}
			res, errObj := f.defaultOp(op, req)
			if errObj != nil {
				f.writeFrame(map[string]any{"v": 1, "id": id, "ok": false, "error": errObj})
			} else {
				f.reply(id, res)
			}
		}()
	}
}

func (f *fake) rule(op string, req map[string]any) *Rule {
	f.rmu.Lock()
	defer f.rmu.Unlock()
	for _, r := range f.rules {
		if r.Op != op || (r.Once && r.used) {
			continue
		}
		ok := true
		for k, v := range r.Match {
			if fmt.Sprint(req[k]) != fmt.Sprint(v) {
				ok = false
			}
		}
		if ok {
			r.used = true
			return r
		}
	}
	return nil
}

func (f *fake) answer(id any, r *Rule) {
	for _, p := range r.Progress {
		f.progress(id, p)
	}
	if r.DelayMS > 0 {
		time.Sleep(time.Duration(r.DelayMS) * time.Millisecond)
	}
	frame := map[string]any{"v": 1, "id": id}
	switch {
	case r.Error != nil:
		frame["ok"] = false
		frame["error"] = r.Error
	default:
		frame["ok"] = true
		frame["result"] = r.Reply
		if r.Reply == nil {
			frame["result"] = map[string]any{}
		}
	}
	then, arg, _ := strings.Cut(r.Then, ":")
	switch then {
	case "crash":
		os.Exit(1)
	case "hang":
		select {}
	case "garbage":
		f.writeRaw([]byte("this is not a frame\n"))
		return
	case "oversize":
		f.writeRaw([]byte(`{"v":1,"id":` + fmt.Sprint(id) + `,"ok":true,"result":{"x":"` + strings.Repeat("a", flowhelper.MaxFrame) + `"}}` + "\n"))
		return
	case "wrong-id":
		frame["id"] = 9_000_000
	case "partial-frame":
		b, _ := json.Marshal(frame)
		f.writeRaw(b[:len(b)/2])
		os.Exit(1)
	case "stdout":
		fmt.Println(arg)
	case "stderr":
		fmt.Fprintln(os.Stderr, arg)
	}
	f.writeFrame(frame)
	switch then {
	case "dup-id":
		f.writeFrame(frame)
	case "exit":
		n, _ := strconv.Atoi(arg)
		os.Exit(n)
	}
}

func (f *fake) reply(id any, result any) {
	f.writeFrame(map[string]any{"v": 1, "id": id, "ok": true, "result": result})
}

func (f *fake) writeFrame(frame map[string]any) {
	b, err := json.Marshal(frame)
	if err != nil {
		panic(err)
	}
	f.writeRaw(append(b, '\n'))
}

func (f *fake) writeRaw(b []byte) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if _, err := f.out.Write(b); err != nil {
		os.Exit(0)
	}
}

func errObj(kind, reason string, dispatched bool) map[string]any {
	e := map[string]any{"kind": kind, "reason": nil, "flow_type": nil, "mro": []string{}, "dispatched": dispatched}
	if reason != "" {
		e["reason"] = reason
	}
	return e
}

var statusOf = map[string]string{"continue": "completed", "skip": "completed", "reject": "rejected",
	"teach": "needs_demonstration", "escalate": "escalated", "reconcile": "completed"}

func (f *fake) operator() string {
	if v, ok := f.modes["operator"]; ok {
		return v
	}
	op, _ := flowhelper.Operator()
	return op
}

func (f *fake) defaultOp(op string, req map[string]any) (any, map[string]any) {
	switch op {
	case "hello":
		version := "1.32.0"
		if v, ok := f.modes["hello-version"]; ok {
			version = v
		}
		sha := flowhelper.ProgramSHA256
		if v, ok := f.modes["hello-sha"]; ok {
			sha = v
		}
		py := "3.11.2"
		if v, ok := f.modes["python"]; ok {
			py = v
		}
		proto := 1
		if v, ok := f.modes["protocol"]; ok {
			proto, _ = strconv.Atoi(v)
		}
		return map[string]any{"protocol": proto, "helper_sha256": sha, "flow_version": version,
			"flow_supported": strings.HasPrefix(version, "1.32."), "python_version": py, "pid": os.Getpid(),
			"operator": f.operator(), "capabilities": map[string]any{"attended_service": true, "playwright": true, "tutorial": true, "authoring": false}}, nil
	case "service.open":
		f.dmu.Lock()
		defer f.dmu.Unlock()
		if f.opened {
			return nil, errObj("invalid", "already_open", false)
		}
		f.opened = true
		return map[string]any{"backend_kind": "web", "headed": true}, nil
	case "deployment.check":
		return map[string]any{"backend_kind": "web", "headed": req["headed"] == true, "url_present": true}, nil
	case "authoring.probe":
		return map[string]any{"importable": false, "mismatched": []any{}}, nil
	case "tutorial.prepare":
		return f.tutorialPrepare(req)
	case "attended.act", "attended.reconcile":
		action, _ := req["action"].(string)
		if op == "attended.reconcile" {
			action = "reconcile"
		}
		if req["operator"] == "" {
			return nil, errObj("refused", "operator_blank", false)
		}
		if req["operator"] != f.operator() {
			return nil, errObj("refused", "operator_mismatch", false)
		}
		f.dmu.Lock()
		defer f.dmu.Unlock()
		if flowhelper.IsLive(action) && !f.opened {
			return nil, errObj("unavailable", "not_open", false)
		}
		key, _ := req["idempotency_key"].(string)
		sig := action + "|" + fmt.Sprint(req["capability_digest"])
		if prev, ok := f.keyReq[key]; ok && prev != sig {
			return nil, errObj("refused", "", true)
		}
		if d, ok := f.decided[key]; ok {
			return map[string]any{"decision": d}, nil
		}
		sum := sha256.Sum256([]byte(key))
		d := map[string]any{"decision_id": hex.EncodeToString(sum[:16]), "action": action, "status": statusOf[action],
			"message": "fake decision", "report_success": nil, "next_transition": nil, "transition_receipt_digest": nil}
		if action == "continue" || action == "skip" {
			d["report_success"] = true
		}
		f.keyReq[key] = sig
		f.decided[key] = d
		return map[string]any{"decision": d}, nil
	case "attended.replay":
		f.dmu.Lock()
		defer f.dmu.Unlock()
		key, _ := req["idempotency_key"].(string)
		if d, ok := f.decided[key]; ok {
			return map[string]any{"decision": d}, nil
		}
		return nil, errObj("refused", "no_prior_decision", false)
	}
	return nil, errObj("invalid", "unknown_op", false)
}

func (f *fake) recordStart(fds map[string]string) {
	if f.record == "" {
		return
	}
	cwd, _ := os.Getwd()
	rec := map[string]any{"argv": os.Args, "env": os.Environ(), "cwd": cwd, "fds": fds, "ppid": os.Getppid(), "pid": os.Getpid()}
	b, _ := json.Marshal(rec)
	_ = os.WriteFile(filepath.Join(f.record, "start-"+strconv.Itoa(os.Getpid())+".json"), b, 0o600)
}

func (f *fake) appendRecord(name string, v any) {
	if f.record == "" {
		return
	}
	f.recordMu.Lock()
	defer f.recordMu.Unlock()
	b, _ := json.Marshal(v)
	fh, err := os.OpenFile(filepath.Join(f.record, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer fh.Close()
	_, _ = fh.Write(append(b, '\n'))
}

// fdKind names what fd is: closed, devnull, fifo:<inode>, socket, file, char.
func fdKind(fd int) string {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "closed"
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return "fifo:" + strconv.FormatUint(uint64(st.Ino), 10)
	case syscall.S_IFSOCK:
		return "socket"
	case syscall.S_IFCHR:
		var dn syscall.Stat_t
		if syscall.Stat(os.DevNull, &dn) == nil && dn.Rdev == st.Rdev {
			return "devnull"
		}
		return "char"
	case syscall.S_IFREG:
		return "file"
	}
	return "other"
}

// Records reads the start records written to dir.
func Records(t testing.TB, dir string) []StartRecord {
	t.Helper()
	ents, _ := filepath.Glob(filepath.Join(dir, "start-*.json"))
	var out []StartRecord
	for _, p := range ents {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r StartRecord
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// StartRecord is one start-<pid>.json.
type StartRecord struct {
	Argv []string          `json:"argv"`
	Env  []string          `json:"env"`
	Cwd  string            `json:"cwd"`
	FDs  map[string]string `json:"fds"`
	PPID int               `json:"ppid"`
	PID  int               `json:"pid"`
}

// Requests reads requests.jsonl from dir.
func Requests(t testing.TB, dir string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
