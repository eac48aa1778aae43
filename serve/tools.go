package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool registry (docs/mcp.md "Tools and their order"): names,
// annotations, descriptions, the exact schema bytes, the wire order and
// tools/list paging. Each feature registers its own tools through it.

// Tool names of the read tools.
const (
	toolListWorkflows   = "list_workflows"
	toolSearchWorkflows = "search_workflows"
	toolGetWorkflow     = "get_workflow"
	toolGetRunReport    = "get_run_report"
	toolListAttention   = "list_needs_attention"
	toolGetAttention    = "get_attention_item"
	toolRunWorkflow     = "run_workflow"
)

// instructions are the server instructions (docs/mcp.md "Server identity").
const instructions = `OpenAdapt Agent serves governed, compiled GUI workflows over local stdio.
Tools return PHI-safe structured results: opaque ids, parameter names, counts and fixed messages. Protected evidence stays on this computer.
Run tools execute through the governed openadapt-flow run CLI.
Trust only status 'success': it alone means the workflow completed and verified.
'halt' means the run stopped safely with evidence kept locally; tell the user the record did not change only when record_changed is 'no'.
'refused' means nothing was executed.
'timeout' and 'interrupted' mean the live effect is uncertain.
'error' means no trustworthy result.
'running' means the run continues: call get_run_report with the run_id and wait_ms, and never start it again.
Never report a halted, refused, timed-out, or error run as a success. The same holds for an interrupted or running run.
Write tools advertise requires_seal: true. This local server never mints a Seal. If a write tool returns unsigned success, treat it as failure. effect_verified: true means the effect happened: never retry or repeat that run.
Every run result, and every run tool failure, carries record_changed (yes, no or unknown), safe_to_retry, next_step and proof: decide from them. Retry only when safe_to_retry is true; when next_step is check_record, a person must check the record before anything runs again.
Pass an idempotency_key and reuse it only to retry the identical call.
Failures return an error object with a code and a recovery hint. Follow the hint; do not retry unchanged.
This process must not be port-forwarded or served over HTTP.`

// sandboxInstructions end the instructions of a sandbox server.
const sandboxInstructions = `
This server is a SANDBOX: its workflows are synthetic, every run result says sandbox: true with its case and engine, and a simulated result (sandbox_engine simulated) never ran anything. Never report a sandbox result as a real run or a real record change.`

// instructions are this server's instructions: the fixed ones, and in the
// sandbox the sandbox's paragraph after them.
func (s *Server) instructions() string {
	if s.sandbox != nil {
		return instructions + sandboxInstructions
	}
	return instructions
}

// placeholderSchema stands for a tool's schemas inside the SDK; the wire
// carries the raw bytes (toolEntry.inRaw, outRaw).
// Both are a *jsonschema.Schema: for any other type AddTool re-marshals the
// input schema through a decoder that allocates 32 KiB per call (33 MB for
// 1,000 run tools), while a *jsonschema.Schema is only type-checked. Raw
// handlers never validate against it; dispatch validates arguments itself.
var placeholderSchema = &jsonschema.Schema{Type: "object"}

// placeholderInput is the input placeholder. AddTool still marshals it
// once for the HTTP-only x-mcp-header check; with both Type and Types set,
// jsonschema's MarshalJSON refuses it at its first check (no reflection, no
// decoder buffer), so that check sees no properties and returns at once,
// while AddTool's own check (Type "object") passes. It never reaches the
// wire: the tools/list middleware replaces it with toolEntry.inRaw for every
// registered tool (the goldens would fail otherwise), and raw handlers are
// never validated against it.
var placeholderInput = &jsonschema.Schema{Type: "object", Types: []string{"object"}}

func boolPtr(b bool) *bool { return &b }

// annotation sets (docs/mcp.md "Tools and their order").
var (
	annRead = &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)}
	annRun  = &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: boolPtr(true), IdempotentHint: false, OpenWorldHint: boolPtr(true)}
)

// toolEntry is one registered tool: its exact wire schemas and the
// validation state its middleware needs.
type toolEntry struct {
	name   string
	rank   int // position in the wire order
	tool   *mcp.Tool
	inRaw  json.RawMessage
	outRaw json.RawMessage
	input  *lazyResolved // nil for run tools (their handler checks arguments)
	output *lazyResolved
	run    bool
	handle mcp.ToolHandler
	// rawResult: see toolDef.rawResult.
	rawResult bool
	// ui is the card that renders the tool's results (apps.go), listed
	// only to Apps clients; appOnly: the tool is listed and callable only
	// by Apps clients.
	ui      string
	appOnly bool
}

// toolDef describes a tool to register.
type toolDef struct {
	name, title, desc string
	input             json.RawMessage
	success           string // the success schema of the outputSchema
	// failure, when set, replaces the failure envelope's schema (the
	// sandbox's run tools).
	failure string
	// run marks a run tool: run annotations, requires_seal, and arguments
	// checked by its handler in the documented order (no schema check
	// first; docs/runs.md "Arguments").
	run bool
	// precheck, for a read tool, decides a failure from the raw arguments
	// before the input schema is checked (nil: none).
	precheck func(args map[string]any, input *jsonschema.Resolved) *failure
	// ann overrides the READ annotations of a non-run tool (attended).
	ann *mcp.ToolAnnotations
	// rawResult: the handler may return a rawResult body (attended tools'
	// 2026-07-28 input-required answer).
	rawResult bool
	// appOnly: an attended action's app-only variant (apps.go).
	appOnly bool
}

// registry is the server's tool table: every registered tool with its
// exact wire schemas, in the wire order, the output schemas shared between
// tools, the results already validated and the tools/list pages encoded
// once.
type registry struct {
	tools   map[string]*toolEntry // by name
	list    []*toolEntry          // the wire order
	schemas map[schemaKey]cachedSchema
	results validatedResults // dispatch.go
	pages   toolPages
	log     *slog.Logger
	// testOnlyPanic, when set, makes the named tool panic (tests of the
	// internal_error path).
	testOnlyPanic string
}

// buildMCP creates the go-sdk server and has each feature register its
// tools, in the wire order (docs/mcp.md "Tools and their order"):
// the catalog tools, get_run_report, the Needs Attention tools and the
// attended actions, the run tools (with the tutorial's), then the
// authoring tools.
func (s *Server) buildMCP() {
	s.reg.tools = map[string]*toolEntry{}
	s.reg.list = nil
	// An authoring-only server registers only the authoring tools.
	if !s.opts.authoringOnly() {
		s.catalog.register(&s.reg)
		if s.sandbox != nil {
			s.sandbox.registerReport(&s.reg)
		} else {
			s.runs.registerReport(&s.reg)
		}
		s.attention.register(&s.reg)
		s.runs.register(&s.reg)
		s.sandbox.register(&s.reg)
		s.tutorial.register(&s.reg, s.runs)
		s.missing.register(&s.reg, s.runs)
	}
	s.authoring.register(&s.reg)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "openadapt-agent", Title: "OpenAdapt Agent", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Logger:       sdkLogger(s.stderr),
		PageSize:     s.reg.pageSize(),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}, Resources: &mcp.ResourceCapabilities{}},
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.CacheScope = "private"
		},
	})
	for _, e := range s.reg.list {
		s.mcp.AddTool(e.tool, e.handle)
	}
	addCards(s.mcp)
	s.mcp.AddReceivingMiddleware(s.receive)
}

// add registers d with handler h wrapped in the tool middleware
// (dispatch.go). A name registered twice is a programming error.
func (r *registry) add(d toolDef, h toolHandler) {
	if _, dup := r.tools[d.name]; dup {
		panic("serve: duplicate tool " + d.name)
	}
	out, resolved := r.schemaFor(d.success, d.run, d.failure)
	// The SDK re-marshals raw schemas at AddTool (0.5 ms per run tool, most
	// of a 1,000-bundle start), but only type-checks a *jsonschema.Schema.
	// So tools are registered with a placeholder and the tools/list
	// middleware puts the exact raw bytes on the wire.
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
	} else if d.ann != nil {
		t.Annotations = d.ann
	}
	e := &toolEntry{name: d.name, rank: len(r.list), tool: t, inRaw: d.input, outRaw: out, output: resolved, run: d.run, rawResult: d.rawResult,
		ui: cardFor(d), appOnly: d.appOnly}
	if !d.run {
		// Run arguments are validated by their handler, in their own order.
		e.input = &lazyResolved{raw: d.input}
		h = checkArguments(e.input, d.precheck, h)
	}
	e.handle = r.toolMiddleware(e, decodeArguments(h, d.run))
	r.tools[d.name] = e
	r.list = append(r.list, e)
}

// maxListBytes keeps every tools/list page under the 4 MiB frame bound
// with room for the envelope; testOnlyMaxListBytes, when positive,
// replaces it (TestToolsListPreEncoded pages a small list).
const maxListBytes = 3_800_000

var testOnlyMaxListBytes int

// pageSize is the tools/list page size: everything in one page when it fits
// in a frame (at least 5000 tools), else as many of the largest tool as fit.
// The read tools sort before the run tools, so the first page always holds
// them in registration order, and later pages hold run tools by id.
func (r *registry) pageSize() int {
	total, largest := 0, 0
	for _, e := range r.list {
		if e.appOnly {
			continue // only Apps clients list them; a page has room for their few hundred bytes
		}
		// An upper bound of the tool's JSON size: raw schema bytes, the
		// escaped strings, and the fixed keys and annotations.
		// The strings count as json.Marshal([]string{name, title,
		// description}) would: brackets, commas and each encoded string.
		t := e.tool
		strs := 4 + jsonStringLen(t.Name) + jsonStringLen(t.Title) + jsonStringLen(t.Description)
		n := len(e.inRaw) + len(e.outRaw) + strs + 400
		total += n
		largest = max(largest, n)
	}
	limit := maxListBytes
	if testOnlyMaxListBytes > 0 {
		limit = testOnlyMaxListBytes
	}
	if total <= limit || largest == 0 {
		return 10000
	}
	return max(5, limit/largest)
}

// jsonStringLen is the length of s as encoding/json encodes a string
// (quotes, HTML-safe escapes, invalid UTF-8 as \ufffd), counted without
// encoding it: a page's size bound used to marshal every tool's strings
// (7 MB for 10,000 tools).
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// schemaFor returns the outputSchema bytes and their resolved form for a
// success schema, shared between tools: every run tool has the same
// result schema, so a server with 1,000 run tools resolves it once.
func (r *registry) schemaFor(success string, run bool, failure string) (json.RawMessage, *lazyResolved) {
	// A struct key: a concatenated one copied the whole success schema per
	// tool (40 MB for a start with 10,000 run tools).
	key := schemaKey{success, run, failure}
	if c, ok := r.schemas[key]; ok {
		return c.raw, c.resolved
	}
	raw := outputSchema(success, run)
	if failure != "" {
		raw = compact(`{"type":"object","oneOf":[` + success + `,` + failure + `]}`)
	}
	c := cachedSchema{raw: raw, resolved: &lazyResolved{raw: raw}}
	if r.schemas == nil {
		r.schemas = map[schemaKey]cachedSchema{}
	}
	r.schemas[key] = c
	return c.raw, c.resolved
}

type schemaKey struct {
	success string
	run     bool
	failure string
}

type cachedSchema struct {
	raw      json.RawMessage
	resolved *lazyResolved
}

// lazyResolved is a schema resolved on first use: resolving the read
// tools' schemas took about a tenth of a warm start, before the first
// tools/list reply, which needs only their bytes.
// TestEveryToolSchemaResolves resolves every registered tool's schemas.
type lazyResolved struct {
	once sync.Once
	raw  json.RawMessage
	r    *jsonschema.Resolved
}

func (l *lazyResolved) get() *jsonschema.Resolved {
	l.once.Do(func() { l.r = resolveSchema(l.raw) })
	return l.r
}

// listTools is the tools/list middleware: the go-sdk lists tools sorted by
// name, while the registration order is the contract (docs/mcp.md "Tools
// and their order"), and the SDK holds placeholders where the wire carries
// each tool's exact schema bytes.
//
// On Serve's own stdio connection the page is written from bytes encoded
// once per page: the SDK encodes the result with an empty tools array and
// the transport writes the cached page in its place ([stdio.Transport.Rewrite]).
// Any other session (in-process transports) gets the same page for the SDK
// to encode; TestToolsListPreEncoded pins that both give the same bytes.
func (s *Server) listTools(req mcp.Request, res mcp.Result, err error) (mcp.Result, error) {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || err != nil {
		return res, err
	}
	apps := appsClient(req)
	wire := func(page []*mcp.Tool) []*mcp.Tool { return s.reg.wireTools(page, apps) }
	if t := s.conn.Load(); t != nil {
		if page := s.reg.pages.page(lr.Tools, apps, wire); page != nil && t.Rewrite(req, func(result []byte) [][]byte {
			return spliceTools(result, page)
		}) {
			lr.Tools = []*mcp.Tool{}
			return res, nil
		}
	}
	lr.Tools = wire(lr.Tools)
	return res, err
}

// emptyToolsTail is how the go-sdk's encoding of a tools/list result with
// an empty tools array ends: tools is the last member of the result.
const emptyToolsTail = `"tools":[]}`

// spliceTools is the reply of a tools/list result the SDK encoded with an
// empty tools array: its bytes up to the array, the pre-encoded page and
// the closing brace.
func spliceTools(result, page []byte) [][]byte {
	head, ok := bytes.CutSuffix(result, []byte(emptyToolsTail))
	if !ok {
		// Unreachable while the SDK encodes tools last (TestToolsListPreEncoded).
		return [][]byte{result}
	}
	return [][]byte{head, []byte(`"tools":`), page, {'}'}}
}

// wireTools is a page as the wire carries it: the SDK's page of tools in
// registration order, each with its exact schema bytes. An Apps client's
// page carries each tool's card link and the app-only tools; any other
// client's page has neither (apps.go).
func (r *registry) wireTools(page []*mcp.Tool, apps bool) []*mcp.Tool {
	tools := make([]*mcp.Tool, 0, len(page))
	rank := func(t *mcp.Tool) int {
		if e := r.tools[t.Name]; e != nil {
			return e.rank
		}
		return 0
	}
	for _, t := range page {
		c := *t
		if e := r.tools[t.Name]; e != nil {
			if e.appOnly && !apps {
				continue
			}
			c.InputSchema, c.OutputSchema = e.inRaw, e.outRaw
			if apps && e.ui != "" {
				c.Meta = appsMeta(e)
			}
		}
		tools = append(tools, &c)
	}
	slices.SortStableFunc(tools, func(a, b *mcp.Tool) int { return rank(a) - rank(b) })
	return tools
}

// toolPages holds the tools/list pages encoded once each (the tool set
// never changes after start: listChanged is false), for Serve's stdio
// connection.
type toolPages struct {
	mu     sync.Mutex
	byKey  map[string][]byte // page identity (its tool names) -> the encoded "tools" array
	npages int
	// compact holds each distinct raw schema as encoding/json writes a
	// json.RawMessage (compacted), by its bytes: 1,000 run tools share a
	// few schemas, so each is compacted once and then copied.
	compact map[string][]byte
}

// encodePage encodes a page of tools as the go-sdk does (encoding/json
// without HTML escaping; a json.RawMessage schema is compacted), but
// compacts each distinct schema once: a tool is its fields encoded with
// placeholder schemas, the placeholders then replaced by the schema bytes.
func (p *toolPages) encodePage(tools []*mcp.Tool) ([]byte, error) {
	// Size the page once (an upper bound: a schema is at most its raw size
	// once compacted, a string at most twice its own once escaped, as
	// these texts need no \u escapes): growing a 3.8 MB buffer by doubling
	// copied it over and over (a quarter of a warm start's CPU, page
	// faults included).
	n := 2
	for _, t := range tools {
		in, _ := t.InputSchema.(json.RawMessage)
		sch, _ := t.OutputSchema.(json.RawMessage)
		n += len(in) + len(sch) + 2*(len(t.Name)+len(t.Title)+len(t.Description)) + 512
	}
	out := append(make([]byte, 0, n), '[')
	for i, t := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		var err error
		if out, err = p.appendTool(out, t); err != nil {
			return nil, err
		}
	}
	return append(out, ']'), nil
}

func (p *toolPages) appendTool(out []byte, t *mcp.Tool) ([]byte, error) {
	in, inOK := t.InputSchema.(json.RawMessage)
	sch, outOK := t.OutputSchema.(json.RawMessage)
	if !inOK || !outOK || len(in) == 0 || len(sch) == 0 {
		b, err := encodeJSON(t, false)
		return append(out, b...), err
	}
	c := *t
	c.InputSchema, c.OutputSchema = json.RawMessage("0"), json.RawMessage("1")
	b, err := encodeJSON(&c, false)
	if err != nil {
		return nil, err
	}
	// Every unescaped quote in encoding/json output is structural, so these
	// keys cannot occur inside a string (description, title, _meta values).
	const inKey, outKey = `"inputSchema":0,`, `"outputSchema":1`
	i := bytes.Index(b, []byte(inKey))
	j := bytes.Index(b, []byte(outKey))
	if i < 0 || j < i {
		return nil, fmt.Errorf("tool %s: unexpected encoding", t.Name)
	}
	inC, err := p.compacted(in)
	if err != nil {
		return nil, err
	}
	outC, err := p.compacted(sch)
	if err != nil {
		return nil, err
	}
	out = append(out, b[:i+len(inKey)-2]...)
	out = append(out, inC...)
	out = append(out, b[i+len(inKey)-1:j+len(outKey)-1]...)
	out = append(out, outC...)
	return append(out, b[j+len(outKey):]...), nil
}

func (p *toolPages) compacted(raw json.RawMessage) ([]byte, error) {
	if c, ok := p.compact[string(raw)]; ok {
		return c, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	if p.compact == nil {
		p.compact = map[string][]byte{}
	}
	p.compact[string(raw)] = b.Bytes()
	return b.Bytes(), nil
}

// page returns the encoded "tools" array of the SDK's page, encoding the
// page the first time it is listed; nil when it cannot be encoded (the
// caller then lets the SDK encode the page).
func (p *toolPages) page(sdkPage []*mcp.Tool, apps bool, wire func([]*mcp.Tool) []*mcp.Tool) []byte {
	var kb strings.Builder
	if apps {
		kb.WriteByte(1) // never in a tool name
	}
	for _, t := range sdkPage {
		kb.WriteString(t.Name)
		kb.WriteByte(0)
	}
	key := kb.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if arr, ok := p.byKey[key]; ok {
		return arr
	}
	arr, err := p.encodePage(wire(sdkPage))
	if err != nil {
		return nil
	}
	if p.byKey == nil {
		p.byKey = map[string][]byte{}
	}
	p.byKey[key] = arr
	p.npages++
	return arr
}
