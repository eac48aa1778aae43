package serve

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
)

// catalogTools are the workflow tools (docs/mcp.md "Read tools"):
// list_workflows (per-workflow mode) or search_workflows (catalog mode),
// and get_workflow with its certification.
type catalogTools struct {
	opts   *Options
	cat    *catalog
	gate   *gate          // the listing's admission state
	labels *labels.Labels // --labels, nil without
	flow   *flowCommand   // certification runs `flow certify`
}

// register adds the catalog tools.
func (t *catalogTools) register(reg *registry) {
	export := t.opts.AllowProtectedExport
	if t.opts.ToolMode == "catalog" {
		reg.add(toolDef{name: toolSearchWorkflows, title: "Search workflows",
			desc:  "Pages through the workflows served here by opaque id, matching the query against workflow ids, parameter names, the operator's --labels text and workflow card text only. Use get_workflow for details and run_workflow to run one; a workflow's card name works wherever its id does. Demonstration labels, values, intents, paths and load errors stay local by default.",
			input: inputSearchWorkflow, success: searchWorkflowsSchema(export)}, t.searchWorkflows)
	} else {
		reg.add(toolDef{name: toolListWorkflows, title: "List workflows",
			desc:  "Lists the workflows served here by opaque id, with parameter names and types, step count, availability, whether run tools are enabled, and the operator's workflow card text (name, purpose, what done means, input descriptions) where there is one. Demonstration labels, values, intents, paths and load errors stay local by default.",
			input: inputEmpty, success: listWorkflowsSchema(export)}, t.listWorkflows)
	}
	reg.add(toolDef{name: toolGetWorkflow, title: "Get workflow",
		desc:  "Returns PHI-safe structural metadata and the certification result for one workflow, by opaque id or card name. Recorded values, intents, names, paths and exception text stay local by default.",
		input: inputGetWorkflow, success: getWorkflowSchema(export)}, t.getWorkflow)
}

func (t *catalogTools) listWorkflows(context.Context, *toolCall) (any, *failure) {
	out := workflowList{
		listingHead: t.head(),
		Workflows:   make([]workflowEntry, 0, len(t.cat.workflows)),
		Note:        t.note(),
		Protected:   t.protectedListing(),
	}
	for _, w := range t.cat.workflows {
		out.Workflows = append(out.Workflows, t.project(w))
	}
	return out, nil
}

func (t *catalogTools) searchWorkflows(_ context.Context, c *toolCall) (any, *failure) {
	args := c.args
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
	matches := t.cat.search(terms, availOnly, t.opts.AllowProtectedExport, t.labels)
	out := workflowSearch{
		listingHead:  t.head(),
		TotalMatches: len(matches),
		Workflows:    []workflowEntry{},
		Note:         t.note(),
		Protected:    t.protectedListing(),
	}
	if offset > len(matches) {
		offset = len(matches)
	}
	end := min(offset+limit, len(matches))
	for _, w := range matches[offset:end] {
		out.Workflows = append(out.Workflows, t.project(w))
	}
	if end < len(matches) {
		next := encodeCursor(end, binding)
		out.NextCursor = &next
	}
	return out, nil
}

func (t *catalogTools) getWorkflow(ctx context.Context, c *toolCall) (any, *failure) {
	id, _ := c.args["workflow"].(string)
	w := t.cat.lookup(id)
	if w == nil {
		return nil, fail(CodeUnknownWorkflow)
	}
	c.audit.WorkflowID = &w.id
	p := t.project(w)
	out := workflowDetail{workflowCore: p.workflowCore, Protected: p.Protected}
	if w.available {
		out.SchemaVersion = w.schemaVersion
	}
	out.Certification = t.certify(ctx, w)
	return out, nil
}

// certify runs `flow certify` for get_workflow when a policy or config is
// set.
func (t *catalogTools) certify(ctx context.Context, w *workflow) certification {
	export := t.opts.AllowProtectedExport
	notEval := certification{Certified: nil, Message: certNotEvaluated}
	if !w.available {
		c := certification{Certified: nil, Message: certNotLoaded}
		if export {
			c.Protected = &certificationProtectedBlock{Detail: ""}
		}
		return c
	}
	if t.opts.Policy == "" && t.opts.Config == "" {
		if export {
			notEval.Protected = &certificationProtectedBlock{Detail: ""}
		}
		return notEval
	}
	flow, err := t.flow.resolve()
	if err != nil {
		if export {
			notEval.Protected = &certificationProtectedBlock{Detail: "openadapt-flow was not found."}
		}
		return notEval
	}
	ex := flowrun.Exec(ctx, flowrun.Command{
		Args:    flowrun.CertifyArgs(flow, w.dir, t.opts.Policy, t.opts.Config),
		Env:     t.flow.env,
		Timeout: time.Duration(t.opts.Timeout * float64(time.Second)),
	})
	var c certification
	var code *int
	switch {
	case ex.TimedOut || ex.Canceled || ex.Err != nil:
		c = notEval
	case ex.Code == 0:
		c = certification{Certified: boolPtr(true), Message: certPassed}
		code = &ex.Code
	default:
		c = certification{Certified: boolPtr(false), Message: certNotPassed}
		code = &ex.Code
	}
	if export {
		detail := ex.Stdout
		if detail == "" {
			detail = ex.Stderr
		}
		c.Protected = &certificationProtectedBlock{Certified: c.Certified, ExitCode: code, Detail: detail}
	}
	return c
}

// head opens a listing.
func (t *catalogTools) head() listingHead {
	return listingHead{
		SchemaVersion:            1,
		RunToolsEnabled:          t.opts.runsEnabled(),
		ProtectedExportEnabled:   t.opts.AllowProtectedExport,
		SyntheticDefaultsEnabled: t.opts.AllowSyntheticRecordedDefaults,
		AdmissionGate:            t.gate.name(),
	}
}

func (t *catalogTools) protectedListing() *listingProtectedBlock {
	if !t.opts.AllowProtectedExport {
		return nil
	}
	// Several roots: joined with the OS path-list separator, in order.
	return &listingProtectedBlock{BundlesDir: strings.Join(t.opts.roots(), string(filepath.ListSeparator))}
}

func (t *catalogTools) note() *string {
	if t.opts.runsEnabled() {
		return nil
	}
	n := noteRunToolsDisabled
	return &n
}

// project builds the listing entry of w.
func (t *catalogTools) project(w *workflow) workflowEntry {
	p := workflowEntry{workflowCore: workflowCore{
		ID:         w.id,
		Available:  w.available,
		Parameters: []paramEntry{},
		// An unavailable workflow always carries a code; one without a
		// bundle reason (none today) would say unreadable, never nothing.
		UnavailableReason: unavailableReason(w),
		Encrypted:         w.encrypted,
		Admission:         t.admission(w),
	}}
	p.Label, p.Description = display(w, t.labels.Get(w.id))
	p.Name = w.cardName
	if w.card != nil {
		p.DoneMeans = w.card.DoneMeans
	}
	if w.available {
		n := w.stepCount
		p.StepCount = &n
		for _, pa := range w.sortedParams() {
			p.Parameters = append(p.Parameters, pa.entry(!t.opts.AllowSyntheticRecordedDefaults))
		}
	}
	if t.opts.AllowProtectedExport {
		p.Protected = protectedWorkflow(w)
	}
	return p
}

// admission is a listing entry's admission field.
func (t *catalogTools) admission(w *workflow) string {
	switch {
	case !t.gate.on():
		return "not_required"
	case !w.available:
		return "not_actively_admitted"
	case t.gate.listingAdmitted(w):
		return "active"
	}
	return "not_actively_admitted"
}
