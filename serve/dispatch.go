package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Dispatch (docs/mcp.md "Result envelopes", "Audit log"): the receiving
// middleware answers unknown names and writes one audit line per
// tools/call; the tool middleware around every handler recovers panics,
// decodes and checks the arguments, and turns the handler's body into the
// validated four-part result.

// toolCall is one tools/call as a handler sees it.
type toolCall struct {
	req   *mcp.CallToolRequest
	args  map[string]any // a JSON object, decoded
	audit *auditRec
}

// toolHandler is a tool's handler: a success body, or a failure envelope.
type toolHandler func(ctx context.Context, c *toolCall) (any, *failure)

// receive is the receiving middleware.
func (s *Server) receive(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/list" {
			res, err := next(ctx, method, req)
			return s.listTools(req, res, err)
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctr, ok := req.(*mcp.CallToolRequest)
		if !ok || ctr.Params == nil {
			return next(ctx, method, req)
		}
		start := time.Now()
		rec := &auditRec{}
		name := ctr.Params.Name
		// An app-only tool is unknown to a client that was never told of it.
		if e, known := s.reg.tools[name]; !known || (e.appOnly && !appsClient(ctr)) {
			f := unknownTool(name, s.opts.runsEnabled())
			if f == nil {
				s.audit.call(ctr.Session, rec, start, true)
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: stdio.MsgUnknownTool}
			}
			res := failed(rec, withDecision(f))
			s.audit.call(ctr.Session, rec, start, true)
			return res, nil
		}
		rec.Tool = &name
		res, err := next(context.WithValue(ctx, auditKey{}, rec), method, req)
		var isErr bool
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
			isErr = r.IsError
		}
		s.audit.call(ctr.Session, rec, start, isErr)
		return res, err
	}
}

// unknownTool answers a tools/call of a name that is not registered: a
// run-shaped name gets a run tool's failure envelope, anything else nil (a
// JSON-RPC invalid-params error).
func unknownTool(name string, runEnabled bool) *failure {
	if id, ok := strings.CutPrefix(name, "run_"); !(ok && workflowid.Valid(id)) && name != toolRunWorkflow {
		return nil
	}
	if !runEnabled {
		return fail(CodeRunToolsDisabled)
	}
	return fail(CodeUnknownWorkflow)
}

type auditKey struct{}

func auditFrom(ctx context.Context) *auditRec {
	if r, ok := ctx.Value(auditKey{}).(*auditRec); ok {
		return r
	}
	return &auditRec{}
}

// decodeArguments parses the arguments: absent arguments are an empty
// object; anything but an object is invalid_arguments. A run tool's
// numbers stay json.Number, the caller's own token (a number parameter is
// passed to Flow as that text; docs/runs.md "Parameters file"); every other
// tool's are float64.
func decodeArguments(next toolHandler, numbers bool) toolHandler {
	return func(ctx context.Context, c *toolCall) (any, *failure) {
		raw := c.req.Params.Arguments
		if len(raw) == 0 || string(raw) == "null" {
			c.args = map[string]any{}
			return next(ctx, c)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		if numbers {
			dec.UseNumber()
		}
		if err := dec.Decode(&c.args); err != nil || c.args == nil {
			return nil, fail(CodeInvalidArguments)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fail(CodeInvalidArguments) // more than one value
		}
		return next(ctx, c)
	}
}

// checkArguments validates the arguments against the input schema, after
// the tool's precheck (which decides some failures from the raw values).
func checkArguments(lazy *lazyResolved, precheck func(map[string]any, *jsonschema.Resolved) *failure, next toolHandler) toolHandler {
	return func(ctx context.Context, c *toolCall) (any, *failure) {
		input := lazy.get()
		if precheck != nil {
			if f := precheck(c.args, input); f != nil {
				return nil, f
			}
		}
		if input.Validate(c.args) != nil {
			return nil, invalidArguments(input.Schema(), c.args)
		}
		return next(ctx, c)
	}
}

// invalidArguments is the invalid_arguments failure, its message naming the
// missing required arguments (schema names, which tools/list already shows)
// and counting undeclared ones without echoing them: a client-supplied key
// can carry PHI (the failure schema is closed, so this goes in message
// only).
func invalidArguments(schema *jsonschema.Schema, args map[string]any) *failure {
	if schema == nil {
		return fail(CodeInvalidArguments)
	}
	var missing []string
	for _, name := range schema.Required {
		if _, ok := args[name]; !ok {
			missing = append(missing, name)
		}
	}
	unknown := 0
	for k := range args {
		if _, ok := schema.Properties[k]; !ok {
			unknown++
		}
	}
	return invalidArgumentsFailure(missing, unknown)
}

// invalidArgumentsFailure builds the invalid_arguments failure with the
// names of the missing required arguments (sorted) and the count of
// undeclared ones appended to its fixed message.
func invalidArgumentsFailure(missing []string, unknown int) *failure {
	f := fail(CodeInvalidArguments)
	if len(missing) > 0 {
		missing = slices.Sorted(slices.Values(missing))
		f.Error.Message += " Missing required argument(s): " + strings.Join(missing, ", ") + "."
	}
	if unknown > 0 {
		f.Error.Message += fmt.Sprintf(" %d undeclared argument(s).", unknown)
	}
	return f
}

// toolMiddleware is the outermost layer of every tool: panic recovery, the
// failure code in the audit record, and the result checks (the frame
// bound, then the tool's output schema).
func (r *registry) toolMiddleware(e *toolEntry, next toolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		rec := auditFrom(ctx)
		// A run tool's failure carries the decision fields.
		failedResult := func(rec *auditRec, f *failure) *mcp.CallToolResult {
			if e.run {
				f = withDecision(f)
			}
			return failed(rec, f)
		}
		defer func() {
			if p := recover(); p != nil {
				r.log.Error("tool handler panicked", "tool", e.name)
				res = failedResult(rec, fail(CodeInternalError))
			}
		}()
		if r.testOnlyPanic == e.name {
			panic("test panic")
		}
		body, f := next(ctx, &toolCall{req: req, audit: rec})
		if f != nil {
			return failedResult(rec, f), nil
		}
		if raw, ok := body.(rawResult); ok && e.rawResult {
			return raw.res, nil
		}
		compactJSON, err := encodeJSON(body, false)
		if err != nil {
			r.log.Error("result did not encode", "tool", e.name)
			return failedResult(rec, fail(CodeInternalError)), nil
		}
		// A result whose exact bytes already passed the checks below, against
		// this tool's output schema, passes them again (the frame bound and
		// schema validation are functions of those bytes alone): reuse its
		// indented copy instead of checking it again.
		output := e.output.get()
		if indented, ok := r.results.lookup(output, compactJSON); ok {
			return toolResult(compactJSON, indented, false), nil
		}
		indented := indentJSON(compactJSON)
		// The frame carries both copies, the text one escaped as a JSON
		// string (quotes and newlines double); keep it under 4 MiB.
		if len(compactJSON)+2*len(indented)+1024 > stdio.MaxFrameBytes {
			return failedResult(rec, fail(CodeResultTooLarge)), nil
		}
		if !validates(output, compactJSON) {
			r.log.Error("result does not validate against its output schema", "tool", e.name)
			return failedResult(rec, fail(CodeInternalError)), nil
		}
		if !e.run { // a run's result is new every time (its run_id)
			r.results.store(output, compactJSON, indented)
		}
		return toolResult(compactJSON, indented, false), nil
	}
}

// validatedResults remembers result bytes that passed their tool's checks
// (frame bound, output schema), with their indented copy, so a repeated
// result (get_workflow of the same workflow, an unchanged queue) is
// validated once (every result not seen before is still checked at run
// time). Entries are keyed by the exact
// compact bytes and the resolved schema: nothing that differs by one byte,
// or comes from another tool's schema, is ever taken for validated. Memory is
// bounded: results above maxCachedResult bytes are never kept, and once
// maxCachedResults bytes are held nothing more is added.
type validatedResults struct {
	mu    sync.Mutex
	m     map[*jsonschema.Resolved]map[string]string
	bytes int
}

const (
	maxCachedResult  = 64 << 10
	maxCachedResults = 8 << 20
)

func (v *validatedResults) lookup(schema *jsonschema.Resolved, compactJSON []byte) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	indented, ok := v.m[schema][string(compactJSON)]
	return indented, ok
}

func (v *validatedResults) store(schema *jsonschema.Resolved, compactJSON []byte, indented string) {
	n := len(compactJSON) + len(indented)
	if n > maxCachedResult {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.bytes+n > maxCachedResults {
		return
	}
	if v.m == nil {
		v.m = map[*jsonschema.Resolved]map[string]string{}
	}
	bySchema := v.m[schema]
	if bySchema == nil {
		bySchema = map[string]string{}
		v.m[schema] = bySchema
	}
	if _, dup := bySchema[string(compactJSON)]; !dup {
		bySchema[string(compactJSON)] = indented
		v.bytes += n
	}
}

// failed records f's code in the audit record and returns its result.
func failed(rec *auditRec, f *failure) *mcp.CallToolResult {
	c := string(f.Error.Code)
	rec.Code = &c
	return failureResult(f)
}

// encodeJSON marshals v without HTML escaping, compact.
func encodeJSON(v any, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	compact := bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	if indent {
		return []byte(indentJSON(compact)), nil
	}
	return compact, nil
}

// indentJSON is compactJSON with 2-space indentation: the bytes an
// encoding/json Encoder with SetIndent("", "  ") writes for the same value
// (it indents its compact encoding with the same function), without
// encoding the value a second time.
func indentJSON(compactJSON []byte) string {
	var b bytes.Buffer
	b.Grow(len(compactJSON) + len(compactJSON)/2)
	if err := json.Indent(&b, compactJSON, "", "  "); err != nil {
		// Unreachable: compactJSON is encoding/json's own output.
		return string(compactJSON)
	}
	return b.String()
}

// toolResult builds the four-part result (docs/mcp.md "Result envelopes")
// from a body's two encodings.
func toolResult(compactJSON []byte, indented string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: indented}},
		StructuredContent: json.RawMessage(compactJSON),
		IsError:           isError,
	}
}

// failureResult is the result for a failure envelope, with no tool schema
// check (also used for unknown run-shaped names, which have no tool).
func failureResult(f *failure) *mcp.CallToolResult {
	c, _ := encodeJSON(f, false)
	return toolResult(c, indentJSON(c), true)
}

// sdkLogger is the go-sdk's logger: stderr, WARN and above, with every
// attribute dropped, so caller-supplied method names never reach stderr.
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
