package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

func TestMain(m *testing.M) {
	fakeflow.RunIfInvoked()
	fakehelper.RunIfInvoked()
	testOnlyRunProgressEvery = 100 * time.Millisecond
	// Most tests wait on fake Flow runs, run waits and timeouts: run eight
	// at once. Tests that set a package variable (testOnly…) or the
	// environment stay sequential, and Go runs every sequential test before
	// any parallel one resumes.
	testutil.Parallel(8)
	// The digest cache's key lives in the per-user state folder: keep the
	// tests' keys out of the real one.
	state, err := os.MkdirTemp("", "serve-test-state")
	if err == nil {
		os.Setenv("XDG_STATE_HOME", state)
	}
	flow, cleanup, err := fakeflow.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve tests: the shared fake Flow did not build; each test installs its own:", err)
	}
	sharedFlow = flow
	_, helperCleanup, err := fakehelper.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve tests: the shared fake helper did not build; each test installs its own:", err)
	}
	code := m.Run()
	cleanup()
	helperCleanup()
	if state != "" {
		os.RemoveAll(state)
	}
	os.Exit(code)
}

// sharedFlow is the fake Flow built once for the whole package (see
// fakeflow.BuildShared); "" means each env installs the test binary.
var sharedFlow string

func fakeFlow(t *testing.T) string {
	if sharedFlow != "" {
		return sharedFlow
	}
	return fakeflow.Install(t)
}

// env is a fixture: a bundles root, a runs dir and the fake Flow.
type env struct {
	t       *testing.T
	root    string
	bundles string
	runsDir string
	flow    string
	record  string
	environ []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{
		t:       t,
		root:    root,
		bundles: filepath.Join(root, "bundles"),
		runsDir: filepath.Join(root, "runs"),
		flow:    fakeFlow(t),
		record:  filepath.Join(root, "record.jsonl"),
	}
	if err := os.MkdirAll(e.bundles, 0o755); err != nil {
		t.Fatal(err)
	}
	reports, _ := filepath.Abs("../testdata/flow/reports")
	e.environ = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + root,
		"OPENADAPT_FAKE_FLOW_RECORD=" + e.record,
		"OPENADAPT_FAKE_FLOW_REPORTS_DIR=" + reports,
		"OPENADAPT_FAKE_FLOW_SCENARIO_PARAM=scenario",
	}
	return e
}

// demo writes the Demo Triage fixture (param note, two steps) under name.
func (e *env) demo(dir string, tb testBundle) string {
	if tb.name == "" {
		tb.name = "Demo Triage"
	}
	if tb.params == nil {
		tb.params = map[string]string{"note": "Follow-up in 2 weeks"}
	}
	if tb.intents == nil {
		tb.intents = []string{"Open the patient chart", "type note"}
	}
	writeBundle(e.t, filepath.Join(e.bundles, dir), tb)
	return filepath.Join(e.bundles, dir)
}

func (e *env) opts() Options {
	return Options{
		Bundles:  e.bundles,
		RunsDir:  e.runsDir,
		Timeout:  60,
		RunWait:  20,
		FlowCLI:  e.flow,
		Environ:  append([]string(nil), e.environ...),
		Version:  "test",
		AuditLog: "",
		CacheDir: e.runsDir + "-cache",
	}
}

func fakeflowInvocations(path string) ([]fakeflow.Invocation, error) {
	return fakeflow.ReadInvocations(path)
}

func (e *env) invocations() []fakeflow.Invocation {
	inv, err := fakeflow.ReadInvocations(e.record)
	if err != nil {
		e.t.Fatal(err)
	}
	// Only run invocations count (certify records too).
	var out []fakeflow.Invocation
	for _, i := range inv {
		if len(i.Argv) > 1 && i.Argv[1] == "run" {
			out = append(out, i)
		}
	}
	return out
}

// wantRuns fails the test unless the fake Flow was run n times.
func (e *env) wantRuns(n int) {
	e.t.Helper()
	if got := len(e.invocations()); got != n {
		e.t.Fatalf("%d Flow runs, want %d", got, n)
	}
}

// session is a connected in-process client.
type session struct {
	t      *testing.T
	srv    *Server
	cs     *mcp.ClientSession
	wire   *syncBuffer
	stderr *syncBuffer
	tools  map[string]*mcp.Tool
	prog   *progressLog
}

type progressLog struct {
	mu    chan struct{}
	items []*mcp.ProgressNotificationParams
	// first is closed by the first notification.
	first     chan struct{}
	firstOnce sync.Once
}

func (p *progressLog) add(x *mcp.ProgressNotificationParams) {
	p.mu <- struct{}{}
	p.items = append(p.items, x)
	<-p.mu
	p.firstOnce.Do(func() { close(p.first) })
}

func (p *progressLog) all() []*mcp.ProgressNotificationParams {
	p.mu <- struct{}{}
	defer func() { <-p.mu }()
	return append([]*mcp.ProgressNotificationParams(nil), p.items...)
}

// harnessEra is the protocol version t's in-process clients ask for: the
// 2025-11-25 era (the one production clients negotiate) under
// TestProtocolEra2025 and TestToolListGolden, else "", the SDK's latest
// (2026-07-28). Keyed by the test's name, so era tests run in parallel.
func harnessEra(t *testing.T) string {
	switch top, _, _ := strings.Cut(t.Name(), "/"); top {
	case "TestProtocolEra2025", "TestToolListGolden":
		return "2025-11-25"
	}
	return ""
}

func start(t *testing.T, o Options) *session {
	t.Helper()
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return connect(t, srv, stderr)
}

func connect(t *testing.T, srv *Server, stderr *syncBuffer) *session {
	t.Helper()
	wire := &syncBuffer{}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, &wireLog{Transport: st, w: wire}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prog := &progressLog{mu: make(chan struct{}, 1), first: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			prog.add(r.Params)
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: harnessEra(t)})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, srv: srv, cs: cs, wire: wire, stderr: stderr, tools: map[string]*mcp.Tool{}, prog: prog}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		srv.Close()
	})
	s.loadTools()
	return s
}

// loadTools fills s.tools from a tools/list call.
func (s *session) loadTools() {
	s.t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, tool := range res.Tools {
		s.tools[tool.Name] = tool
	}
}

// call calls a tool and checks the result contract (docs/mcp.md "Result
// envelopes").
func (s *session) call(name string, args any) map[string]any {
	s.t.Helper()
	return s.callCtx(context.Background(), name, args, nil)
}

func (s *session) callCtx(ctx context.Context, name string, args any, token any) map[string]any {
	s.t.Helper()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		s.t.Fatalf("call %s: %v", name, err)
	}
	return s.check(name, res)
}

func (s *session) check(name string, res *mcp.CallToolResult) map[string]any {
	s.t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		s.t.Fatalf("%s: no structuredContent", name)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		s.t.Fatal(err)
	}
	if len(res.Content) != 1 {
		s.t.Fatalf("%s: %d content items", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		s.t.Fatalf("%s: content is not text", name)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		s.t.Fatalf("%s: text is not JSON", name)
	}
	a, _ := json.Marshal(fromText)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		s.t.Fatalf("%s: text and structuredContent differ", name)
	}
	_, isFailure := got["error"]
	if isFailure != res.IsError {
		s.t.Fatalf("%s: isError %v but failure branch %v", name, res.IsError, isFailure)
	}
	if tool := s.tools[name]; tool != nil {
		sb, fb := branches(s.t, tool.OutputSchema)
		okS, okF := sb.Validate(got) == nil, fb.Validate(got) == nil
		if okS == okF {
			s.t.Fatalf("%s: result matches success %v failure %v: %s", name, okS, okF, b)
		}
	}
	return got
}

// branches resolves the two oneOf branches of an outputSchema.
func branches(t *testing.T, schema any) (*jsonschema.Resolved, *jsonschema.Resolved) {
	t.Helper()
	raw, _ := json.Marshal(schema)
	var top struct {
		OneOf []json.RawMessage `json:"oneOf"`
	}
	if err := json.Unmarshal(raw, &top); err != nil || len(top.OneOf) != 2 {
		t.Fatalf("outputSchema is not oneOf[S,F]: %s", raw)
	}
	return resolveSchema(top.OneOf[0]), resolveSchema(top.OneOf[1])
}

func errorCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (s *session) runTool() string {
	for name := range s.tools {
		if strings.HasPrefix(name, "run_workflow_") {
			return name
		}
	}
	s.t.Fatal("no run tool")
	return ""
}

func t_ctx() context.Context { return context.Background() }

// out is everything the server wrote on the wire (the logging transport's
// "write:" lines; "read:" lines are what the client sent).
func (s *session) out() string {
	var b strings.Builder
	for _, l := range strings.Split(s.wire.String(), "\n") {
		if strings.HasPrefix(l, "write:") {
			b.WriteString(l)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// wireLog logs the server's side of the wire like mcp.LoggingTransport
// ("read: " and "write: " lines), but logs each write before it is
// delivered, so a reply the client holds is always already in the log: no
// test waits for the log to catch up.
type wireLog struct {
	mcp.Transport
	w io.Writer
}

func (t *wireLog) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &wireLogConn{Connection: c, w: t.w}, nil
}

type wireLogConn struct {
	mcp.Connection
	mu sync.Mutex
	w  io.Writer
}

func (c *wireLogConn) log(dir string, msg jsonrpc.Message) {
	data, _ := jsonrpc.EncodeMessage(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, "%s: %s\n", dir, data)
}

func (c *wireLogConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.log("read", msg)
	}
	return msg, err
}

func (c *wireLogConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.log("write", msg)
	return c.Connection.Write(ctx, msg)
}

// syncBuffer is a goroutine-safe output sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
