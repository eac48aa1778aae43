package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// fakeClock is the sandbox's clock in tests: After registers a timer that
// fires only when the test fires its duration.
type fakeClock struct {
	mu     sync.Mutex
	timers []fakeTimer
	added  chan time.Duration
}

type fakeTimer struct {
	d  time.Duration
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{added: make(chan time.Duration, 256)} }

func (f *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	f.mu.Lock()
	f.timers = append(f.timers, fakeTimer{d, ch})
	f.mu.Unlock()
	f.added <- d
	return ch
}

// await blocks until a timer of d has been registered (since the last
// await of it).
func (f *fakeClock) await(d time.Duration) {
	for got := range f.added {
		if got == d {
			return
		}
	}
}

// fire fires every pending timer of d.
func (f *fakeClock) fire(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	keep := f.timers[:0]
	for _, t := range f.timers {
		if t.d == d {
			t.ch <- time.Now()
			continue
		}
		keep = append(keep, t)
	}
	f.timers = keep
}

// noRunner fails the test if anything tries to start Flow.
type noRunner struct{ t *testing.T }

func (r noRunner) Run(context.Context, flowrun.Request) flowrun.Result {
	r.t.Error("the sandbox started a Flow process")
	return flowrun.Result{}
}

// sandboxOpts are a sandbox server's options whose every path is inside
// root, so a test can see that nothing was written, and whose Flow lookup
// fails the test.
func sandboxOpts(t *testing.T, root string) Options {
	return Options{
		Sandbox:  true,
		RunsDir:  filepath.Join(root, "runs"),
		CacheDir: filepath.Join(root, "cache"),
		Timeout:  60,
		RunWait:  20,
		Version:  "test",
		Environ:  []string{"HOME=" + root},
		LookPath: func(string) (string, error) {
			t.Error("the sandbox looked up Flow")
			return "", errors.New("no Flow")
		},
	}
}

// sandboxSession starts a sandbox server with a fake clock and connects a
// client whose elicitation handler is answer (nil: none).
func sandboxSession(t *testing.T, o Options, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*session, *fakeClock) {
	t.Helper()
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	copts := &mcp.ClientOptions{}
	if answer != nil {
		copts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(r) }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, srv: srv, cs: cs, wire: &syncBuffer{}, stderr: stderr, tools: map[string]*mcp.Tool{}, prog: &progressLog{mu: make(chan struct{}, 1)}}
	t.Cleanup(func() { cs.Close(); ss.Wait(); srv.Close() })
	s.loadTools()
	clock := newFakeClock()
	s.srv.sandbox.clock = clock
	s.srv.runs.manager.runner = noRunner{t}
	return s, clock
}

// wantDecision checks a result's decision fields and sandbox mark.
func wantDecision(t *testing.T, got map[string]any, status, changed string, retry bool, step, proof, sandboxCase string) {
	t.Helper()
	if status != "" && got["status"] != status {
		t.Errorf("status %v, want %s", got["status"], status)
	}
	if got["record_changed"] != changed || got["safe_to_retry"] != retry || got["next_step"] != step || got["proof"] != proof {
		t.Errorf("decision %v %v %v %v, want %s %v %s %s", got["record_changed"], got["safe_to_retry"], got["next_step"], got["proof"], changed, retry, step, proof)
	}
	if got["sandbox"] != true || got["sandbox_case"] != sandboxCase || got["sandbox_engine"] != "simulated" {
		t.Errorf("sandbox mark %v %v %v", got["sandbox"], got["sandbox_case"], got["sandbox_engine"])
	}
	if m, ok := got["message"].(string); ok && !strings.HasPrefix(m, sandboxNote) {
		t.Errorf("message %q does not say it is the sandbox", m)
	}
}

// runTool is the per-workflow run tool of a case.
func sandboxTool(c string) string { return "run_" + sandboxWorkflowID(c) }

// TestSandboxCases runs every case through a real client session, per
// workflow and through run_workflow by card name, and checks each result's
// status, decision fields and sandbox mark; then that nothing was started
// or written.
func TestSandboxCases(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"per-workflow", "catalog"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			o := sandboxOpts(t, root)
			o.ToolMode = mode
			s, clock := sandboxSession(t, o, nil)
			run := func(c string, params map[string]any) map[string]any {
				if mode == "catalog" {
					return s.call(toolRunWorkflow, map[string]any{"workflow_id": "sandbox_" + c, "params": params})
				}
				return s.call(sandboxTool(c), params)
			}
			none := map[string]any{}

			got := run(sandboxSuccess, none)
			wantDecision(t, got, "success", "yes", false, "none", "simulated", sandboxSuccess)
			if got["success"] != true || got["execution_outcome"] != "VERIFIED" {
				t.Errorf("success %v", got)
			}

			got = run(sandboxHalt, none)
			wantDecision(t, got, "halt", "no", false, "wait_for_person", "none", sandboxHalt)
			item, _ := got["needs_attention"].(map[string]any)
			if item == nil || item["durably_paused"] != true || !strings.HasPrefix(item["headline"].(string), sandboxHeadline) {
				t.Errorf("halt's item %v", got["needs_attention"])
			}

			got = run(sandboxRefused, none)
			wantDecision(t, got, "refused", "no", true, "fix_setup", "none", sandboxRefused)
			if checks, _ := got["failed_checks"].([]any); !slices.Equal(checks, []any{"not_certified", "approval_missing"}) {
				t.Errorf("failed_checks %v", got["failed_checks"])
			}

			got = run(sandboxInvalid, map[string]any{"visit_date": "2026-02-30", "priority": "soon", "note": ""})
			if errorCode(got) != "invalid_arguments" {
				t.Fatalf("invalid inputs answered %v", got)
			}
			wantDecision(t, got, "", "no", true, "fix_inputs", "none", sandboxInvalid)
			problems, _ := got["invalid_inputs"].([]any)
			if len(problems) != 3 || !strings.Contains(toJSONString(problems), `"problem":"not_a_date"`) || !strings.Contains(toJSONString(problems), `"problem":"not_allowed"`) || !strings.Contains(toJSONString(problems), `"problem":"too_short"`) {
				t.Errorf("invalid_inputs %v", problems)
			}
			if strings.Contains(toJSONString(got), "2026-02-30") || strings.Contains(toJSONString(got), "soon") {
				t.Errorf("a refused value is echoed: %v", got)
			}
			got = run(sandboxInvalid, map[string]any{"visit_date": "2026-02-28", "priority": "urgent", "note": "ok"})
			wantDecision(t, got, "success", "yes", false, "none", "simulated", sandboxInvalid)

			got = run(sandboxInterrupted, none)
			wantDecision(t, got, "interrupted", "unknown", false, "check_record", "none", sandboxInterrupted)

			got = run(sandboxUnsignedProd, none)
			wantDecision(t, got, "error", "yes", false, "none", "simulated", sandboxUnsignedProd)
			if got["effect_verified"] != true || got["success"] != false {
				t.Errorf("unsigned production success %v", got)
			}

			// The timeout ends at its simulated deadline.
			answer := make(chan map[string]any, 1)
			go func() { answer <- run(sandboxTimeout, none) }()
			clock.await(sandboxDelay)
			clock.fire(sandboxDelay)
			got = <-answer
			wantDecision(t, got, "timeout", "unknown", false, "check_record", "none", sandboxTimeout)

			// The long run answers running at once, then resolves through
			// get_run_report's wait.
			got = run(sandboxLongRun, none)
			wantDecision(t, got, "running", "unknown", false, "call_get_run_report", "none", sandboxLongRun)
			runID := got["run_id"].(string)
			go func() { answer <- s.call(toolGetRunReport, map[string]any{"run_id": runID, "wait_ms": 25000}) }()
			clock.await(maxWait)
			clock.fire(sandboxDelay)
			got = <-answer
			wantDecision(t, got, "success", "yes", false, "none", "simulated", sandboxLongRun)
			got = s.call(toolGetRunReport, map[string]any{"run_id": runID})
			wantDecision(t, got, "success", "yes", false, "none", "simulated", sandboxLongRun)

			// Unknown runs are not reported.
			if got := s.call(toolGetRunReport, map[string]any{"run_id": flowrun.NewRunID()}); errorCode(got) != "report_unavailable" {
				t.Errorf("unknown run %v", got)
			}
			// Nothing was written: no runs, state or cache folder.
			for _, d := range []string{"runs", "cache"} {
				if _, err := os.Stat(filepath.Join(root, d)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the sandbox wrote %s", d)
				}
			}
		})
	}
}

func toJSONString(v any) string {
	b, _ := encodeJSON(v, false)
	return string(b)
}

// TestSandboxListing: the sandbox workflows appear through the normal read
// tools, with card names, and run tools are reported enabled.
func TestSandboxListing(t *testing.T) {
	t.Parallel()
	s, _ := sandboxSession(t, sandboxOpts(t, t.TempDir()), nil)
	got := s.call(toolListWorkflows, map[string]any{})
	if got["run_tools_enabled"] != true || got["note"] != nil {
		t.Errorf("listing head %v %v", got["run_tools_enabled"], got["note"])
	}
	ws, _ := got["workflows"].([]any)
	var names []string
	for _, w := range ws {
		names = append(names, w.(map[string]any)["name"].(string))
	}
	want := []string{"sandbox_success", "sandbox_halt", "sandbox_refused", "sandbox_invalid_inputs", "sandbox_timeout", "sandbox_interrupted", "sandbox_long_run", "sandbox_unsigned_production_success"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v", names)
	}
	// get_workflow never certifies (no Flow, even with --policy).
	s.srv.opts.Policy = "standard"
	d := s.call(toolGetWorkflow, map[string]any{"workflow": "sandbox_invalid_inputs"})
	if c, _ := d["certification"].(map[string]any); c["message"] != certNotEvaluated {
		t.Errorf("certification %v", d["certification"])
	}
	if d["id"] != sandboxWorkflowID(sandboxInvalid) || !strings.Contains(toJSONString(d["parameters"]), `"enum":["routine","urgent"]`) {
		t.Errorf("get_workflow %v", d)
	}
	in := toJSONString(s.tools[sandboxTool(sandboxInvalid)].InputSchema)
	if !strings.Contains(in, `"visit_date":{"format":"date"`) && !strings.Contains(in, `"format":"date"`) {
		t.Errorf("typed input schema %s", in)
	}
	if b := s.srv.Banner(); !strings.Contains(b, "SANDBOX") || !strings.Contains(b, "engine simulated") {
		t.Errorf("banner %q", b)
	}
	if ins := s.cs.InitializeResult().Instructions; !strings.HasSuffix(ins, sandboxInstructions) {
		t.Errorf("instructions %q", ins)
	}
	if s.srv.helper != nil {
		t.Error("the simulated sandbox started the Flow helper")
	}
}

// TestSandboxCatalogSearch: search_workflows finds sandbox workflows by
// card text.
func TestSandboxCatalogSearch(t *testing.T) {
	t.Parallel()
	o := sandboxOpts(t, t.TempDir())
	o.ToolMode = "catalog"
	s, _ := sandboxSession(t, o, nil)
	got := s.call(toolSearchWorkflows, map[string]any{"query": "sandbox_long_run"})
	if got["total_matches"] != 1.0 {
		t.Errorf("search %v", got)
	}
	if f := s.call(toolRunWorkflow, map[string]any{"workflow_id": "sandbox_nope", "params": map[string]any{}}); errorCode(f) != "unknown_workflow" || f["sandbox"] != true {
		t.Errorf("unknown workflow %v", f)
	}
}

// TestSandboxAttention: a halted sandbox run opens an item that takes
// Reject, Teach and Escalate through the confirmation form; a decline
// does nothing, a stale digest is refused, a retry replays.
func TestSandboxAttention(t *testing.T) {
	t.Parallel()
	var asked []string
	var mu sync.Mutex
	decline := false
	s, _ := sandboxSession(t, sandboxOpts(t, t.TempDir()), func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.Params.Message)
		if decline {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
	})
	names := toolNames(s)
	for _, n := range []string{"reject_attention", "teach_attention", "escalate_attention"} {
		if !slices.Contains(names, n) {
			t.Fatalf("no %s in %v", n, names)
		}
	}
	if slices.Contains(names, "continue_attention") || slices.Contains(names, "skip_attention") {
		t.Fatalf("live actions in the sandbox: %v", names)
	}
	if q := s.call(toolListAttention, map[string]any{}); q["open_count"] != 0.0 {
		t.Fatalf("queue before a halt %v", q)
	}
	s.call(sandboxTool(sandboxHalt), map[string]any{})
	q := s.call(toolListAttention, map[string]any{})
	if q["open_count"] != 1.0 || q["actions_enabled"] != true || q["live_actions_ready"] != false {
		t.Fatalf("queue %v", q)
	}
	item := q["items"].([]any)[0].(map[string]any)
	id := item["id"].(string)
	digest := item["capability"].(map[string]any)["digest"].(string)
	if got := s.call(toolGetAttention, map[string]any{"attention_id": id}); got["id"] != id {
		t.Fatalf("get_attention_item %v", got)
	}
	args := func(key, confirm string) map[string]any {
		return map[string]any{"attention_id": id, "capability_digest": digest, "idempotency_key": key, confirm: true}
	}

	got := s.call("teach_attention", args("teach-key-0000000001", "request_demonstration"))
	if got["status"] != "needs_demonstration" || got["action"] != "teach" || !strings.HasPrefix(got["message"].(string), "Sandbox (simulated)") {
		t.Errorf("teach %v", got)
	}
	got = s.call("escalate_attention", args("escalate-key-00000001", "request_assistance"))
	if got["status"] != "escalated" {
		t.Errorf("escalate %v", got)
	}
	// A retry with the same key answers the same decision without a form.
	n := len(asked)
	again := s.call("escalate_attention", args("escalate-key-00000001", "request_assistance"))
	if again["decision_id"] != got["decision_id"] || len(asked) != n {
		t.Errorf("replay %v (forms %d → %d)", again, n, len(asked))
	}
	// A stale digest is refused before any form.
	stale := args("reject-key-0000000001", "confirmed_reject")
	stale["capability_digest"] = "sha256:" + strings.Repeat("0", 64)
	if f := s.call("reject_attention", stale); errorCode(f) != "capability_stale" || len(asked) != n {
		t.Errorf("stale digest %v", f)
	}
	// A declined form does nothing.
	mu.Lock()
	decline = true
	mu.Unlock()
	if f := s.call("reject_attention", args("reject-key-0000000002", "confirmed_reject")); errorCode(f) != "operator_declined" {
		t.Errorf("declined %v", f)
	}
	if q := s.call(toolListAttention, map[string]any{}); q["open_count"] != 1.0 {
		t.Errorf("a declined reject closed the item: %v", q)
	}
	mu.Lock()
	decline = false
	mu.Unlock()
	got = s.call("reject_attention", args("reject-key-0000000003", "confirmed_reject"))
	if got["status"] != "rejected" || got["success"] != false {
		t.Errorf("reject %v", got)
	}
	if q := s.call(toolListAttention, map[string]any{}); q["open_count"] != 0.0 {
		t.Errorf("queue after reject %v", q)
	}
	if f := s.call(toolGetAttention, map[string]any{"attention_id": id}); errorCode(f) != "attention_not_found" {
		t.Errorf("rejected item %v", f)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range asked {
		if !strings.HasPrefix(m, sandboxHeadline) {
			t.Errorf("form message %q does not say it is the sandbox", m)
		}
	}
	if len(asked) != 4 {
		t.Errorf("%d forms, want 4 (teach, escalate, declined reject, reject)", len(asked))
	}
}

// TestSandboxWithoutElicitation: a client without forms cannot decide.
func TestSandboxWithoutElicitation(t *testing.T) {
	t.Parallel()
	s, _ := sandboxSession(t, sandboxOpts(t, t.TempDir()), nil)
	s.call(sandboxTool(sandboxHalt), map[string]any{})
	item := s.call(toolListAttention, map[string]any{})["items"].([]any)[0].(map[string]any)
	f := s.call("reject_attention", map[string]any{"attention_id": item["id"], "capability_digest": item["capability"].(map[string]any)["digest"],
		"idempotency_key": "reject-key-0000000001", "confirmed_reject": true})
	if errorCode(f) != "elicitation_unsupported" {
		t.Errorf("without forms %v", f)
	}
}

// TestSandboxStateless: a second server knows nothing of the first's runs
// and items.
func TestSandboxStateless(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s1, _ := sandboxSession(t, sandboxOpts(t, root), nil)
	r := s1.call(sandboxTool(sandboxHalt), map[string]any{})
	s1.srv.Close()
	s2, _ := sandboxSession(t, sandboxOpts(t, root), nil)
	if f := s2.call(toolGetRunReport, map[string]any{"run_id": r["run_id"]}); errorCode(f) != "report_unavailable" {
		t.Errorf("a run survived a restart: %v", f)
	}
	if q := s2.call(toolListAttention, map[string]any{}); q["open_count"] != 0.0 {
		t.Errorf("an item survived a restart: %v", q)
	}
}

// TestSandboxStopInterrupts: a run still going when the server stops is
// interrupted.
func TestSandboxStopInterrupts(t *testing.T) {
	t.Parallel()
	s, _ := sandboxSession(t, sandboxOpts(t, t.TempDir()), nil)
	got := s.call(sandboxTool(sandboxLongRun), map[string]any{})
	r := s.srv.sandbox.get(got["run_id"].(string))
	s.srv.sandbox.close()
	<-r.done
	if rec := r.record(); rec.Outcome == nil || rec.Outcome.Status != flowrun.StatusInterrupted {
		t.Errorf("record %+v", rec)
	}
}

// TestSandboxIdempotency: the same key and inputs replay the run; other
// inputs under the same key conflict; only the newest keys are kept.
func TestSandboxIdempotency(t *testing.T) {
	t.Parallel()
	s, _ := sandboxSession(t, sandboxOpts(t, t.TempDir()), nil)
	args := map[string]any{"visit_date": "2026-01-02", "priority": "routine", "note": "a", "idempotency_key": "sandbox-key-00000001"}
	a := s.call(sandboxTool(sandboxInvalid), args)
	b := s.call(sandboxTool(sandboxInvalid), args)
	if a["run_id"] != b["run_id"] || b["replayed"] != true {
		t.Errorf("replay %v %v", a["run_id"], b)
	}
	args["note"] = "b"
	if f := s.call(sandboxTool(sandboxInvalid), args); errorCode(f) != "idempotency_conflict" || f["sandbox"] != true {
		t.Errorf("conflict %v", f)
	}
	sb := s.srv.sandbox
	for i := range maxSandboxRuns + 5 {
		sb.begin(sb.cat.byName["sandbox_success"], &sandboxCases[0])
		sb.mu.Lock()
		sb.bindings[fmt.Sprintf("k%d", i)], sb.keys = sandboxBinding{}, append(sb.keys, fmt.Sprintf("k%d", i))
		sb.mu.Unlock()
	}
	s.call(sandboxTool(sandboxSuccess), map[string]any{"idempotency_key": "sandbox-key-00000002"})
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if len(sb.live) > maxSandboxRuns || len(sb.bindings) > maxSandboxRuns || len(sb.keys) != len(sb.bindings) {
		t.Errorf("%d runs, %d bindings, %d keys kept", len(sb.live), len(sb.bindings), len(sb.keys))
	}
}

// TestSandboxOptions: the sandbox refuses what would make it a real server,
// and --sandbox-engine outside it.
func TestSandboxOptions(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*Options){
		"bundles":      func(o *Options) { o.Bundles = t.TempDir() },
		"allow-run":    func(o *Options) { o.AllowRun = true },
		"tutorial":     func(o *Options) { o.Tutorial = true },
		"authoring":    func(o *Options) { o.Authoring = true },
		"engine":       func(o *Options) { o.SandboxEngine = "nope" },
		"engine alone": func(o *Options) { o.Sandbox = false; o.SandboxEngine = EngineSimulated; o.Bundles = t.TempDir() },
	} {
		o := sandboxOpts(t, t.TempDir())
		edit(&o)
		var ce *ConfigError
		if _, err := New(o, nil); !errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSandboxByMode: --mode sandbox is the sandbox for an API caller too.
func TestSandboxByMode(t *testing.T) {
	t.Parallel()
	o := sandboxOpts(t, t.TempDir())
	o.Sandbox, o.Mode = false, ModeSandbox
	srv, err := New(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.sandbox == nil || len(srv.catalog.cat.workflows) != len(sandboxCases) {
		t.Fatal("--mode sandbox did not serve the sandbox")
	}
}
