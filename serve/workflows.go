package serve

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/doctor"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
)

// CatalogModeAdvisedAbove is the number of workflows above which
// per-workflow tool mode is the wrong one: the banner and list_workflows
// advise --tool-mode catalog, as doctor's bundles check does (the number
// lives there, below serve; BENCHMARKS.md has the tools/list figures behind
// it).
const CatalogModeAdvisedAbove = doctor.CatalogModeAdvisedAbove

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
			desc:  "Lists the workflows served here, a page at a time (limit, then next_cursor), by opaque id, with parameter names and types, step count, availability, whether run tools are enabled, and the operator's workflow card text (name, purpose, what done means, input descriptions) where there is one. Demonstration labels, values, intents, paths and load errors stay local by default.",
			input: inputListWorkflows, success: listWorkflowsSchema(export)}, t.listWorkflows)
	}
	reg.add(toolDef{name: toolGetWorkflow, title: "Get workflow",
		desc:  "Returns PHI-safe structural metadata and the certification result for one workflow, by opaque id or card name. Recorded values, intents, names, paths and exception text stay local by default.",
		input: inputGetWorkflow, success: getWorkflowSchema(export)}, t.getWorkflow)
}

func (t *catalogTools) listWorkflows(_ context.Context, c *toolCall) (any, *failure) {
	p, f := t.page(c.args, toolListWorkflows, t.cat.workflows, queryBinding(toolListWorkflows, nil, false, t.cat.listingDigest()))
	if f != nil {
		return nil, f
	}
	return workflowList{
		listingHead:  t.head(),
		TotalMatches: p.total,
		Workflows:    p.entries,
		NextCursor:   p.next,
		Note:         t.listNote(),
		Protected:    t.protectedListing(),
	}, nil
}

func (t *catalogTools) searchWorkflows(_ context.Context, c *toolCall) (any, *failure) {
	q, _ := c.args["query"].(string)
	availOnly, _ := c.args["available_only"].(bool)
	terms := normalizeQuery(q)
	matches := t.cat.search(terms, availOnly, t.opts.AllowProtectedExport, t.labels)
	p, f := t.page(c.args, toolSearchWorkflows, matches, queryBinding(toolSearchWorkflows, terms, availOnly, t.cat.listingDigest()))
	if f != nil {
		return nil, f
	}
	return workflowSearch{
		listingHead:  t.head(),
		TotalMatches: p.total,
		Workflows:    p.entries,
		NextCursor:   p.next,
		Note:         t.note(),
		Protected:    t.protectedListing(),
	}, nil
}

// workflowPage is one page of a workflow listing.
type workflowPage struct {
	entries []workflowEntry
	total   int
	next    *string
}

// page cuts the page the arguments ask for (limit, cursor) out of matches,
// every workflow of the listing in discovery order. A cursor that is not
// this listing's (binding) is invalid_arguments (docs/mcp.md "Paging").
func (t *catalogTools) page(args map[string]any, tool string, matches []*workflow, binding string) (workflowPage, *failure) {
	limit := pageLimit(args)
	offset := 0
	if s, ok := args["cursor"].(string); ok {
		o, ok := decodeCursor(s, binding, len(matches))
		if !ok {
			return workflowPage{}, badCursor(tool)
		}
		offset = o
	}
	end := min(offset+limit, len(matches))
	p := workflowPage{entries: make([]workflowEntry, 0, end-offset), total: len(matches)}
	for _, w := range matches[offset:end] {
		p.entries = append(p.entries, t.project(w))
	}
	if end < len(matches) {
		next := encodeCursor(end, binding)
		p.next = &next
	}
	return p, nil
}

// pageLimit is the limit argument (the input schema bounds it), or the
// default page size.
func pageLimit(args map[string]any) int {
	if v, ok := args["limit"].(float64); ok && v >= 1 {
		return min(int(v), maxPageLimit)
	}
	return defaultPageLimit
}

// badCursor is invalid_arguments for a cursor the listing did not hand out:
// malformed, from another query, tool, listing or server, or stale.
func badCursor(tool string) *failure {
	f := fail(CodeInvalidArguments)
	f.Error.Message = "The cursor is not a next_cursor this server handed out for this listing: it is malformed, from another query or listing, or stale."
	f.Error.Recovery = "Call " + tool + " again without a cursor to start from the first page (with the same query), then pass each page's next_cursor unchanged."
	return f
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
	// The sandbox's workflows are synthetic: nothing to certify.
	if t.opts.Policy == "" && t.opts.Config == "" || t.opts.Sandbox {
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

// listNote is list_workflows' note: the run tools note, then, above
// catalogAdvisedAbove workflows, the advice to serve them in catalog mode.
func (t *catalogTools) listNote() *string {
	n := t.note()
	if len(t.cat.workflows) <= CatalogModeAdvisedAbove {
		return n
	}
	if n == nil {
		s := noteCatalogAdvised
		return &s
	}
	s := *n + " " + noteCatalogAdvised
	return &s
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
