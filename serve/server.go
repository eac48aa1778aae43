package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

// Tool names (§4.2).
const (
	toolListWorkflows   = "list_workflows"
	toolSearchWorkflows = "search_workflows"
	toolGetWorkflow     = "get_workflow"
	toolGetRunReport    = "get_run_report"
	toolListAttention   = "list_needs_attention"
	toolGetAttention    = "get_attention_item"
	toolRunWorkflow     = "run_workflow"
)

// instructions are the server instructions of §2.
const instructions = `OpenAdapt Agent serves governed, compiled GUI workflows over local stdio.
Tools return PHI-safe structured results: opaque ids, parameter names, counts and fixed messages. Protected evidence stays on this computer.
Run tools execute through the governed openadapt-flow run CLI.
Trust only status 'success': it alone means the workflow completed and verified.
'halt' means the run stopped safely with evidence kept locally; if execution_outcome is HALTED, tell the user the record did not change.
'refused' means nothing was executed.
'timeout' and 'interrupted' mean the live effect is uncertain.
'error' means no trustworthy result.
'running' means the run continues: call get_run_report with the run_id and wait_ms, and never start it again.
Never report a halted, refused, timed-out, or error run as a success. The same holds for an interrupted or running run.
Write tools advertise requires_seal: true. This local server never mints a Seal. If a write tool returns unsigned success, treat it as failure. effect_verified: true means the effect happened: never retry or repeat that run.
Pass an idempotency_key and reuse it only to retry the identical call.
Failures return an error object with a code and a recovery hint. Follow the hint; do not retry unchanged.
This process must not be port-forwarded or served over HTTP.`

// toolKind selects a handler.
type toolKind int

const (
	kindList toolKind = iota
	kindSearch
	kindGetWorkflow
	kindGetRunReport
	kindListAttention
	kindGetAttention
	kindRunPerWorkflow
	kindRunCatalog
)

// placeholderSchema stands for a tool's schemas inside the SDK; the wire
// carries the raw bytes (toolEntry.inRaw, outRaw).
// Both are a *jsonschema.Schema: for any other type AddTool re-marshals the
// input schema through a decoder that allocates 32 KiB per call (33 MB for
// 1,000 run tools), while a *jsonschema.Schema is only type-checked. Raw
// handlers never validate against it; dispatch validates arguments itself.
var placeholderSchema = &jsonschema.Schema{Type: "object"}

// placeholderInput is the input placeholder. AddTool still re-marshals it
// once for the HTTP-only x-mcp-header check (another 32 KiB decoder buffer
// per tool); its Default does not encode, so that check sees no properties
// and returns at once. It never reaches the wire: the tools/list middleware
// replaces it with toolEntry.inRaw for every registered tool (the goldens
// would fail otherwise), and raw handlers are never validated against it.
var placeholderInput = &jsonschema.Schema{Type: "object", Default: json.RawMessage("!")}

type toolEntry struct {
	inRaw  json.RawMessage
	outRaw json.RawMessage
	name   string
	kind   toolKind
	wf     *workflow // per-workflow run tools
	input  *jsonschema.Resolved
	output *jsonschema.Resolved
}

// Server is one governed MCP server instance: its catalog, run manager,
// audit log and the go-sdk server with its tools.
type Server struct {
	opts   Options
	prep   *prepared
	log    *slog.Logger
	stderr io.Writer

	cat     *catalog
	tools   map[string]*toolEntry
	order   []string
	pending []pendingTool
	rank    map[string]int
	schemas map[string]cachedSchema
	mcp     *mcp.Server

	audit *auditLog
	runs  *runManager
	gate  *gate

	state       stateDir
	instance    string
	runner      flowrun.Runner
	childEnv    []string
	idem        *idempotency
	failedCount int
	flowMissing bool
	closeOnce   sync.Once
	ownerFile   *os.File

	finishedMu    sync.Mutex
	finished      map[string]*liveRun // export mode: tails of ended runs
	finishedOrder []string

	sessMu   sync.Mutex
	sessions map[*mcp.ServerSession]string

	// testOnlyPanic, when set, makes the named tool panic (tests of the
	// internal_error path).
	testOnlyPanic string
}

func boolPtr(b bool) *bool { return &b }

// annotation sets (§4.1).
var (
	annRead = &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annRun  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(true)}
)

// buildMCP creates the go-sdk server and registers the tools in §4.2 order.
func (s *Server) buildMCP() {
	s.tools = map[string]*toolEntry{}
	s.rank = map[string]int{}
	s.pending = nil
	s.registerTools()
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "openadapt-agent", Title: "OpenAdapt Agent", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(s.stderr),
		PageSize:     s.pageSize(),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope = "private"
		},
	})
	for _, p := range s.pending {
		e := p.entry
		s.mcp.AddTool(p.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.dispatch(ctx, e, req), nil
		})
	}
}

// registerTools builds the tool list in the order of §4.2.
func (s *Server) registerTools() {
	export := s.opts.AllowProtectedExport
	catalogMode := s.opts.ToolMode == "catalog"
	if catalogMode {
		s.addTool(toolSearchWorkflows, "Search workflows", kindSearch, nil,
			"Pages through the workflows served here by opaque id, matching the query against workflow ids and parameter names only. Use get_workflow for details and run_workflow to run one. Demonstration labels, values, intents, paths and load errors stay local by default.",
			inputSearchWorkflow, searchWorkflowsSchema(export), annRead, false)
	} else {
		s.addTool(toolListWorkflows, "List workflows", kindList, nil,
			"Lists the workflows served here by opaque id, with parameter names and types, step count, availability, and whether run tools are enabled. Demonstration labels, values, intents, paths and load errors stay local by default.",
			inputEmpty, listWorkflowsSchema(export), annRead, false)
	}
	s.addTool(toolGetWorkflow, "Get workflow", kindGetWorkflow, nil,
		"Returns PHI-safe structural metadata and the certification result for one workflow, by opaque id. Recorded values, intents, names, paths and exception text stay local by default.",
		inputGetWorkflow, getWorkflowSchema(export), annRead, false)
	s.addTool(toolGetRunReport, "Get run report", kindGetRunReport, nil,
		"Returns the PHI-safe status and count summary of a run started by this server's run tools. Pass wait_ms to long-poll until the run is terminal. The raw report, observed text, paths, stdout and stderr stay local unless protected export was enabled at start.",
		inputGetRunReport, runReportSchema(export), annRead, false)
	s.addTool(toolListAttention, "List Needs Attention", kindListAttention, nil,
		"Lists PHI-safe local halt cards and their exact currently allowed attended actions. Names, observed text, parameters, reports and paths are never returned.",
		inputEmpty, queueSchema, annRead, false)
	s.addTool(toolGetAttention, "Get Needs Attention item", kindGetAttention, nil,
		"Reloads one Needs Attention card by opaque id before an operator decision. Use the newly returned capability digest; stale digests are refused.",
		inputGetAttention, attentionSchema, annRead, false)
	if !s.opts.AllowRun {
		return
	}
	if catalogMode {
		s.addTool(toolRunWorkflow, "Run workflow", kindRunCatalog, nil,
			runDescription(-1, nil, export),
			runWorkflowInput(s.opts.AllowURLOverride), runOutcomeSchema(export), annRun, true)
		return
	}
	avail := make([]*workflow, 0, len(s.cat.workflows))
	for _, w := range s.cat.workflows {
		if w.available {
			avail = append(avail, w)
		}
	}
	slices.SortFunc(avail, func(a, b *workflow) int { return strings.Compare(a.id, b.id) })
	// Run tools share their output schema, and their input schema and
	// description per distinct parameter list and step count: build each
	// once (the bytes are only read, by the tools/list middleware).
	outcome := runOutcomeSchema(export)
	inputs := map[string]json.RawMessage{}
	descs := map[int]string{}
	for _, w := range avail {
		var kb strings.Builder
		for _, p := range w.params {
			kb.WriteString(strconv.Itoa(len(p)) + ":" + p)
		}
		key := kb.String()
		input, ok := inputs[key]
		if !ok {
			input = runToolInput(w.params, s.opts.AllowURLOverride, s.opts.AllowSyntheticRecordedDefaults)
			inputs[key] = input
		}
		var desc string
		if export && w.name != nil {
			desc = runDescription(w.stepCount, w.name, export)
		} else if d, ok := descs[w.stepCount]; ok {
			desc = d
		} else {
			desc = runDescription(w.stepCount, nil, export)
			descs[w.stepCount] = desc
		}
		s.addTool("run_"+w.id, "Run workflow", kindRunPerWorkflow, w, desc, input, outcome, annRun, true)
	}
}

func runDescription(steps int, name *string, export bool) string {
	what := "the selected compiled workflow"
	if export && name != nil {
		what = "'" + *name + "'"
	}
	if steps >= 0 {
		what += fmt.Sprintf(" (%d steps)", steps)
	}
	return "Executes " + what + " through the governed openadapt-flow run CLI with fail-closed admission gates. " +
		"Status values: 'success' (the only success); 'halt' (NOT success: stopped safely, evidence kept locally); 'refused' (nothing executed); " +
		"'timeout' (stopped at the deadline, effect uncertain); 'error' (no trustworthy result); 'running' (still in progress: call get_run_report with the run_id and wait_ms, never start it again); " +
		"'interrupted' (the server stopped mid-run, effect uncertain). This tool has requires_seal: true, so if it returns unsigned success, treat it as failure. " +
		"Pass an idempotency_key to make retries safe. Never treat a non-success status as success."
}

func (s *Server) addTool(name, title string, kind toolKind, w *workflow, desc string, input json.RawMessage, success string, ann *mcp.ToolAnnotations, write bool) {
	if _, dup := s.tools[name]; dup {
		panic("serve: duplicate tool " + name)
	}
	out, resolved := s.schemaFor(success)
	// The SDK re-marshals raw schemas at AddTool (0.5 ms per run tool, most
	// of a 1,000-bundle start), but only type-checks a *jsonschema.Schema.
	// So tools are registered with a placeholder and the tools/list
	// middleware puts the exact raw bytes on the wire (§3.1).
	t := &mcp.Tool{
		Name:         name,
		Title:        title,
		Description:  desc,
		InputSchema:  placeholderInput,
		OutputSchema: placeholderSchema,
		Annotations:  ann,
	}
	if write {
		t.Meta = mcp.Meta{"requires_seal": true}
	}
	e := &toolEntry{name: name, kind: kind, wf: w, output: resolved, inRaw: input, outRaw: out}
	if kind != kindRunPerWorkflow && kind != kindRunCatalog {
		// Run arguments are validated by validateRunArgs (§5.6 order).
		e.input = resolveSchema(input)
	}
	s.tools[name] = e
	s.rank[name] = len(s.order)
	s.order = append(s.order, name)
	s.pending = append(s.pending, pendingTool{t, e})
}

type pendingTool struct {
	tool  *mcp.Tool
	entry *toolEntry
}

// maxListBytes keeps every tools/list page under the 4 MiB frame bound
// (§12) with room for the envelope.
const maxListBytes = 3_800_000

// pageSize is the tools/list page size: everything in one page when it fits
// in a frame (§2: at least 5000), else as many of the largest tool as fit.
// The read tools sort before the run tools, so the first page always holds
// them in registration order, and later pages hold run tools by id.
func (s *Server) pageSize() int {
	total, largest := 0, 0
	for _, p := range s.pending {
		// An upper bound of the tool's JSON size: raw schema bytes, the
		// escaped strings, and the fixed keys and annotations.
		t := p.tool
		strs, _ := json.Marshal([]string{t.Name, t.Title, t.Description})
		n := len(p.entry.inRaw) + len(p.entry.outRaw) + len(strs) + 400
		total += n
		largest = max(largest, n)
	}
	if total <= maxListBytes || largest == 0 {
		return 10000
	}
	return max(5, maxListBytes/largest)
}

// schemaFor returns the outputSchema bytes and their resolved form for a
// success schema, shared between tools: every run tool has the same R, so a
// server with 1,000 run tools resolves it once.
func (s *Server) schemaFor(success string) (json.RawMessage, *jsonschema.Resolved) {
	if c, ok := s.schemas[success]; ok {
		return c.raw, c.resolved
	}
	raw := outputSchema(success)
	c := cachedSchema{raw: raw, resolved: resolveSchema(raw)}
	if s.schemas == nil {
		s.schemas = map[string]cachedSchema{}
	}
	s.schemas[success] = c
	return c.raw, c.resolved
}

type cachedSchema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// sdkLogger is the go-sdk's logger: stderr, WARN and above, with every
// attribute dropped, so caller-supplied method names never reach stderr
// (§1.2).
func sdkLogger(w io.Writer) *slog.Logger {
	return slog.New(&dropAttrsHandler{w: w})
}

type dropAttrsHandler struct {
	mu sync.Mutex
	w  io.Writer
}

func (h *dropAttrsHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (h *dropAttrsHandler) Handle(_ context.Context, r slog.Record) error {
	// The message itself may be formatted by the SDK with caller text; only
	// fixed level information is kept.
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintf(h.w, "serve: mcp sdk %s\n", strings.ToLower(r.Level.String()))
	return err
}
func (h *dropAttrsHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *dropAttrsHandler) WithGroup(string) slog.Handler      { return h }

// receiving middleware: unknown tool names are answered before the SDK
// dispatches them (§3.1), and every tools/call gets one audit line (§11).
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			// The go-sdk lists tools sorted by name; the registration order of
			// §4.2 is the contract, so restore it.
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				tools := make([]*mcp.Tool, len(lr.Tools))
				for i, t := range lr.Tools {
					c := *t
					if e := s.tools[t.Name]; e != nil {
						c.InputSchema, c.OutputSchema = e.inRaw, e.outRaw
					}
					tools[i] = &c
				}
				slices.SortStableFunc(tools, func(a, b *mcp.Tool) int { return s.rank[a.Name] - s.rank[b.Name] })
				lr.Tools = tools
			}
			return res, err
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil {
			return next(ctx, method, req)
		}
		start := time.Now()
		rec := &auditRec{Tool: nil}
		ctx = context.WithValue(ctx, auditKey{}, rec)
		name := ctr.Params.Name
		if _, known := s.tools[name]; !known {
			runShaped := runShapedRE.MatchString(name) || name == "run_local_quickstart" || name == toolRunWorkflow
			if !runShaped {
				s.writeAudit(ctr.Session, rec, start, true)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msgUnknownTool}
			}
			code := CodeUnknownWorkflow
			if !s.opts.AllowRun {
				code = CodeRunToolsDisabled
			}
			c := string(code)
			rec.Code = &c
			s.writeAudit(ctr.Session, rec, start, true)
			return failureResult(fail(code)), nil
		}
		tn := name
		rec.Tool = &tn
		res, err := next(ctx, method, req)
		var isErr bool
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
			isErr = r.IsError
		}
		s.writeAudit(ctr.Session, rec, start, isErr)
		return res, err
	}
}

type auditKey struct{}

func auditFrom(ctx context.Context) *auditRec {
	if r, ok := ctx.Value(auditKey{}).(*auditRec); ok {
		return r
	}
	return &auditRec{}
}

// dispatch validates arguments, runs the handler with panic recovery and
// builds the validated result (§3.1).
func (s *Server) dispatch(ctx context.Context, e *toolEntry, req *mcp.CallToolRequest) (res *mcp.CallToolResult) {
	rec := auditFrom(ctx)
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("tool handler panicked", "tool", e.name)
			c := string(CodeInternalError)
			rec.Code = &c
			res = failureResult(fail(CodeInternalError))
		}
	}()
	if s.testOnlyPanic == e.name {
		panic("test panic")
	}
	args, ok := decodeArgs(req.Params.Arguments)
	var body any
	var f *failure
	if !ok {
		f = fail(CodeInvalidArguments)
	} else {
		body, f = s.handle(ctx, e, req, args, rec)
	}
	if f != nil {
		c := string(f.Error.Code)
		rec.Code = &c
		return failureResult(f)
	}
	compactJSON, err := encodeJSON(body, false)
	if err != nil {
		s.log.Error("result did not encode", "tool", e.name)
		return s.internalError(rec)
	}
	indented, _ := encodeJSON(body, true)
	// The frame carries both copies, the text one escaped as a JSON string
	// (quotes and newlines double); keep it under 4 MiB (§12).
	if len(compactJSON)+2*len(indented)+1024 > MaxFrameBytes {
		c := string(CodeResultTooLarge)
		rec.Code = &c
		return failureResult(fail(CodeResultTooLarge))
	}
	if !validates(e.output, compactJSON) {
		s.log.Error("result does not validate against its output schema", "tool", e.name)
		return s.internalError(rec)
	}
	return toolResult(compactJSON, indented, false)
}

func (s *Server) internalError(rec *auditRec) *mcp.CallToolResult {
	c := string(CodeInternalError)
	rec.Code = &c
	return failureResult(fail(CodeInternalError))
}

// decodeArgs parses tool arguments. Absent arguments are an empty object;
// anything but an object is invalid.
func decodeArgs(raw json.RawMessage) (map[string]any, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, true
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

func (s *Server) handle(ctx context.Context, e *toolEntry, req *mcp.CallToolRequest, args map[string]any, rec *auditRec) (any, *failure) {
	switch e.kind {
	case kindRunPerWorkflow, kindRunCatalog:
		return s.handleRun(ctx, e, req, args, rec)
	case kindGetRunReport:
		// unsafe_run_id is decided from the string alone, first.
		if v, ok := args["run_id"].(string); ok && !runIDRE.MatchString(v) {
			return nil, fail(CodeUnsafeRunID)
		}
	case kindGetAttention:
		// A malformed id string is one more "not found" (§5.5); only a
		// wrong type is invalid_arguments.
		if v, ok := args["attention_id"].(string); ok && !attentionRE.MatchString(v) {
			probe := maps.Clone(args)
			probe["attention_id"] = "000000000000000000000000"
			if e.input.Validate(probe) == nil {
				return nil, fail(CodeAttentionNotFound)
			}
		}
	}
	if e.input.Validate(args) != nil {
		return nil, fail(CodeInvalidArguments)
	}
	switch e.kind {
	case kindList:
		return s.listWorkflows(), nil
	case kindSearch:
		return s.searchWorkflows(args)
	case kindGetWorkflow:
		return s.getWorkflow(ctx, args, rec)
	case kindGetRunReport:
		return s.getRunReport(ctx, req, args, rec)
	case kindListAttention:
		return s.listAttention()
	case kindGetAttention:
		return s.getAttention(args, rec)
	}
	return nil, fail(CodeInternalError)
}

func (s *Server) listWorkflows() any {
	out := listWorkflowsP{
		SchemaVersion:            1,
		RunToolsEnabled:          s.opts.AllowRun,
		ProtectedExportEnabled:   s.opts.AllowProtectedExport,
		SyntheticDefaultsEnabled: s.opts.AllowSyntheticRecordedDefaults,
		AdmissionGate:            s.gateName(),
		Workflows:                make([]workflowP, 0, len(s.cat.workflows)),
		Note:                     s.note(),
	}
	for _, w := range s.cat.workflows {
		out.Workflows = append(out.Workflows, s.projectWorkflow(w))
	}
	if s.opts.AllowProtectedExport {
		out.Protected = &listingProtectedP{BundlesDir: s.opts.Bundles}
	}
	return out
}

func (s *Server) searchWorkflows(args map[string]any) (any, *failure) {
	q, _ := args["query"].(string)
	availOnly, _ := args["available_only"].(bool)
	limit := 20
	if v, ok := args["limit"].(float64); ok {
		limit = int(v)
	}
	terms := normalizeQuery(q)
	binding := queryBinding(terms, availOnly)
	offset := 0
	if c, ok := args["cursor"].(string); ok {
		o, ok := decodeCursor(c, binding)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		offset = o
	}
	matches := s.cat.search(terms, availOnly, s.opts.AllowProtectedExport)
	out := searchWorkflowsP{
		SchemaVersion:            1,
		RunToolsEnabled:          s.opts.AllowRun,
		ProtectedExportEnabled:   s.opts.AllowProtectedExport,
		SyntheticDefaultsEnabled: s.opts.AllowSyntheticRecordedDefaults,
		AdmissionGate:            s.gateName(),
		TotalMatches:             len(matches),
		Workflows:                []workflowP{},
		Note:                     s.note(),
	}
	if offset > len(matches) {
		offset = len(matches)
	}
	end := min(offset+limit, len(matches))
	for _, w := range matches[offset:end] {
		out.Workflows = append(out.Workflows, s.projectWorkflow(w))
	}
	if end < len(matches) {
		c := encodeCursor(end, binding)
		out.NextCursor = &c
	}
	if s.opts.AllowProtectedExport {
		out.Protected = &listingProtectedP{BundlesDir: s.opts.Bundles}
	}
	return out, nil
}

func (s *Server) getWorkflow(ctx context.Context, args map[string]any, rec *auditRec) (any, *failure) {
	id, _ := args["workflow"].(string)
	w := s.cat.lookup(id)
	if w == nil {
		return nil, fail(CodeUnknownWorkflow)
	}
	rec.WorkflowID = &w.id
	p := s.projectWorkflow(w)
	out := getWorkflowP{
		ID: p.ID, Available: p.Available, StepCount: p.StepCount, Parameters: p.Parameters,
		Encrypted: p.Encrypted, Admission: p.Admission, Protected: p.Protected,
	}
	if w.available {
		out.SchemaVersion = w.schemaVersion
	}
	out.Certification = s.certify(ctx, w)
	return out, nil
}
