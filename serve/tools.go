package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool registration (§4): names, annotations, descriptions, the exact
// schema bytes, the §4.2 order and tools/list paging.

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

func boolPtr(b bool) *bool { return &b }

// annotation sets (§4.1).
var (
	annRead = &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annRun  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(true)}
)

// toolEntry is one registered tool: its exact wire schemas and the
// validation state its middleware needs.
type toolEntry struct {
	name   string
	rank   int // position in the §4.2 order
	tool   *mcp.Tool
	inRaw  json.RawMessage
	outRaw json.RawMessage
	output *jsonschema.Resolved
	run    bool
	handle mcp.ToolHandler
	// rawResult: see toolDef.rawResult.
	rawResult bool
}

// toolDef describes a tool to register.
type toolDef struct {
	name, title, desc string
	input             json.RawMessage
	success           string // the success schema S of the outputSchema
	// run marks a run tool: run annotations, requires_seal, and arguments
	// checked by its handler in the order of §5.6 (no schema check first).
	run bool
	// precheck, for a read tool, decides a failure from the raw arguments
	// before the input schema is checked (nil: none).
	precheck func(args map[string]any, input *jsonschema.Resolved) *failure
	// ann overrides the READ annotations of a non-run tool (attended).
	ann *mcp.ToolAnnotations
	// rawResult: the handler may return a rawResult body (attended tools'
	// 2026-07-28 input-required answer).
	rawResult bool
}

// buildMCP creates the go-sdk server and registers the tools in §4.2 order.
func (s *Server) buildMCP() {
	s.tools = map[string]*toolEntry{}
	s.list = nil
	s.registerTools()
	s.registerAuthoring()
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "openadapt-agent", Title: "OpenAdapt Agent", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       sdkLogger(s.stderr),
		PageSize:     s.pageSize(),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope = "private"
		},
	})
	for _, e := range s.list {
		s.mcp.AddTool(e.tool, e.handle)
	}
	s.mcp.AddReceivingMiddleware(s.receive)
}

// registerTools builds the tool list in the order of §4.2, each name bound
// to its own handler.
func (s *Server) registerTools() {
	if s.opts.authoringOnly() {
		return // §4.2: an authoring-only server registers only the authoring tools
	}
	export := s.opts.AllowProtectedExport
	catalogMode := s.opts.ToolMode == "catalog"
	if catalogMode {
		s.addTool(toolDef{name: toolSearchWorkflows, title: "Search workflows",
			desc:  "Pages through the workflows served here by opaque id, matching the query against workflow ids and parameter names only. Use get_workflow for details and run_workflow to run one. Demonstration labels, values, intents, paths and load errors stay local by default.",
			input: inputSearchWorkflow, success: searchWorkflowsSchema(export)}, s.searchWorkflows)
	} else {
		s.addTool(toolDef{name: toolListWorkflows, title: "List workflows",
			desc:  "Lists the workflows served here by opaque id, with parameter names and types, step count, availability, and whether run tools are enabled. Demonstration labels, values, intents, paths and load errors stay local by default.",
			input: inputEmpty, success: listWorkflowsSchema(export)}, s.listWorkflows)
	}
	s.addTool(toolDef{name: toolGetWorkflow, title: "Get workflow",
		desc:  "Returns PHI-safe structural metadata and the certification result for one workflow, by opaque id. Recorded values, intents, names, paths and exception text stay local by default.",
		input: inputGetWorkflow, success: getWorkflowSchema(export)}, s.getWorkflow)
	s.addTool(toolDef{name: toolGetRunReport, title: "Get run report",
		desc:  "Returns the PHI-safe status and count summary of a run started by this server's run tools. Pass wait_ms to long-poll until the run is terminal. The raw report, observed text, paths, stdout and stderr stay local unless protected export was enabled at start.",
		input: inputGetRunReport, success: runReportSchema(export), precheck: runIDFirst}, s.getRunReport)
	s.addTool(toolDef{name: toolListAttention, title: "List Needs Attention",
		desc:  "Lists PHI-safe local halt cards and their exact currently allowed attended actions. Names, observed text, parameters, reports and paths are never returned.",
		input: inputEmpty, success: queueSchema}, s.listAttention)
	s.addTool(toolDef{name: toolGetAttention, title: "Get Needs Attention item",
		desc:  "Reloads one Needs Attention card by opaque id before an operator decision. Use the newly returned capability digest; stale digests are refused.",
		input: inputGetAttention, success: attentionSchema, precheck: attentionIDNotFound}, s.getAttention)
	s.registerAttended()
	if !s.opts.AllowRun {
		return
	}
	if catalogMode {
		s.addTool(toolDef{name: toolRunWorkflow, title: "Run workflow", desc: runDescription(-1, nil, export),
			input: runWorkflowInput(s.opts.AllowURLOverride), success: runOutcomeSchema(export), run: true}, s.runCatalog)
		s.registerQuickstart()
		return
	}
	if s.tut != nil {
		s.registerQuickstart()
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
		s.addTool(toolDef{name: "run_" + w.id, title: "Run workflow", desc: desc, input: input, success: outcome, run: true}, s.runPerWorkflow(w))
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

// addTool registers d with handler h wrapped in the tool middleware
// (dispatch.go).
func (s *Server) addTool(d toolDef, h toolHandler) {
	if _, dup := s.tools[d.name]; dup {
		panic("serve: duplicate tool " + d.name)
	}
	out, resolved := s.schemaFor(d.success)
	// The SDK re-marshals raw schemas at AddTool (0.5 ms per run tool, most
	// of a 1,000-bundle start), but only type-checks a *jsonschema.Schema.
	// So tools are registered with a placeholder and the tools/list
	// middleware puts the exact raw bytes on the wire (§3.1).
	t := &mcp.Tool{
		Name:         d.name,
		Title:        d.title,
		Description:  d.desc,
		InputSchema:  placeholderInput,
		OutputSchema: placeholderSchema,
		Annotations:  annRead,
	}
	if d.run {
		t.Annotations = annRun
		t.Meta = mcp.Meta{"requires_seal": true}
	} else {
		if d.ann != nil {
			t.Annotations = d.ann
		}
		// Run arguments are validated by their handler (§5.6 order).
		h = checkArguments(resolveSchema(d.input), d.precheck, h)
	}
	e := &toolEntry{name: d.name, rank: len(s.list), tool: t, inRaw: d.input, outRaw: out, output: resolved, run: d.run, rawResult: d.rawResult}
	e.handle = s.toolMiddleware(e, decodeArguments(h))
	s.tools[d.name] = e
	s.list = append(s.list, e)
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
	for _, e := range s.list {
		// An upper bound of the tool's JSON size: raw schema bytes, the
		// escaped strings, and the fixed keys and annotations.
		t := e.tool
		strs, _ := json.Marshal([]string{t.Name, t.Title, t.Description})
		n := len(e.inRaw) + len(e.outRaw) + len(strs) + 400
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

// listTools is the tools/list middleware: the go-sdk lists tools sorted by
// name, while the registration order of §4.2 is the contract, and the SDK
// holds placeholders where the wire carries each tool's exact schema bytes.
func (s *Server) listTools(res mcp.Result, err error) (mcp.Result, error) {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || err != nil {
		return res, err
	}
	tools := make([]*mcp.Tool, len(lr.Tools))
	rank := func(t *mcp.Tool) int {
		if e := s.tools[t.Name]; e != nil {
			return e.rank
		}
		return 0
	}
	for i, t := range lr.Tools {
		c := *t
		if e := s.tools[t.Name]; e != nil {
			c.InputSchema, c.OutputSchema = e.inRaw, e.outRaw
		}
		tools[i] = &c
	}
	slices.SortStableFunc(tools, func(a, b *mcp.Tool) int { return rank(a) - rank(b) })
	lr.Tools = tools
	return res, err
}
