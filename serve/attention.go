package serve

import (
	"context"
	"io"
	"maps"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// attentionTools are the Needs Attention tools (docs/attended.md "The
// queue"): list_needs_attention and get_attention_item, read natively and
// PHI-safe through internal/attention on every server, and the attended
// actions (attended.go) with --allow-attended-actions.
type attentionTools struct {
	opts    *Options
	runsDir string
	helper  *helperProc // nil without a helper
	// live is true when the attended live session opened: continue and
	// skip are registered.
	live bool
	// cat serves the step ids a decision may name as its next step.
	cat     *catalog
	confirm *confirmer
	stderr  io.Writer
	// sandbox, in the sandbox, holds the items instead of the runs folder.
	sandbox *sandbox
	// flowMissing: attended actions were asked for but Flow is not
	// installed: Reject, Teach and Escalate are listed and answer
	// flow_not_found.
	flowMissing bool
	// instance is the server's instance id: queue cursors are bound to it.
	instance string

	operatorWarned sync.Once
}

// actions reports whether the attended actions are served.
func (t *attentionTools) actions() bool {
	return t.sandbox != nil || t.opts.AllowAttendedActions && (t.helper != nil || t.flowMissing)
}

// register adds the two Needs Attention tools, then the attended actions.
func (t *attentionTools) register(reg *registry) {
	reg.add(toolDef{name: toolListAttention, title: "List Needs Attention",
		desc:  "Lists PHI-safe local halt cards, newest first and a page at a time (limit, then next_cursor), and their exact currently allowed attended actions. Names, observed text, parameters, reports and paths are never returned.",
		input: inputListAttention, success: queueSchema}, t.listAttention)
	reg.add(toolDef{name: toolGetAttention, title: "Get Needs Attention item",
		desc:  "Reloads one Needs Attention card by opaque id before an operator decision. Use the newly returned capability digest; stale digests are refused.",
		input: inputGetAttention, success: attentionSchema, precheck: attentionIDNotFound}, t.getAttention)
	t.registerActions(reg)
}

func (t *attentionTools) listAttention(_ context.Context, c *toolCall) (any, *failure) {
	binding := attentionBinding(t.instance)
	var after *attentionKey
	if s, ok := c.args["cursor"].(string); ok {
		k, ok := decodeAttentionCursor(s, binding)
		if !ok {
			return nil, badCursor(toolListAttention)
		}
		after = &k
	}
	items := t.items()
	if items == nil {
		items = []attention.Item{}
	}
	page, next := attentionPage(items, after, pageLimit(c.args), binding)
	// The wrapper fields follow the helper's liveness.
	enabled := t.opts.AllowAttendedActions && t.helper.alive() || t.sandbox != nil
	return attentionQueue{OpenCount: len(items), ActionsEnabled: enabled, LiveActionsReady: enabled && t.live, Items: page, NextCursor: next}, nil
}

// attentionIDNotFound makes a malformed id string one more "not found"
// when the arguments are otherwise valid; only a wrong type is
// invalid_arguments.
func attentionIDNotFound(args map[string]any, input *jsonschema.Resolved) *failure {
	if v, ok := args["attention_id"].(string); ok && !attention.ValidID(v) {
		probe := maps.Clone(args)
		probe["attention_id"] = "000000000000000000000000"
		if input.Validate(probe) == nil {
			return fail(CodeAttentionNotFound)
		}
	}
	return nil
}

func (t *attentionTools) getAttention(_ context.Context, c *toolCall) (any, *failure) {
	id, _ := c.args["attention_id"].(string)
	it, err := t.item(id)
	if err != nil {
		return nil, fail(CodeAttentionNotFound)
	}
	c.audit.AttentionID = &it.ID
	return it, nil
}

// items is the queue: the runs folder's items, or the sandbox's.
func (t *attentionTools) items() []attention.Item {
	if t.sandbox != nil {
		return t.sandbox.attentionItems()
	}
	return attention.List(t.runsDir)
}

// item is the current item id, or attention.ErrNotFound.
func (t *attentionTools) item(id string) (attention.Item, error) {
	if t.sandbox != nil {
		if it, ok := t.sandbox.attentionItem(id); ok {
			return it, nil
		}
		return attention.Item{}, attention.ErrNotFound
	}
	return attention.Get(t.runsDir, id)
}

// attentionForRun is the fresh item for a run of this server, or nil: a
// halted run's result carries it.
func attentionForRun(runsDir, runID string) any {
	if it := attention.ForRun(runsDir, runID); it != nil {
		return it
	}
	return nil
}
