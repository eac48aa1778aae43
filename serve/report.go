package serve

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// get_run_report (docs/mcp.md "Read tools").

// maxWait is the get_run_report wait_ms bound.
const maxWait = 25 * time.Second

// registerReport adds get_run_report, registered on every server that
// serves bundles (a read-only one answers from the runs folder).
func (t *runTools) registerReport(reg *registry) {
	reg.add(toolDef{name: toolGetRunReport, title: "Get run report",
		desc:  "Returns the PHI-safe status and count summary of a run started by this server's run tools. Pass wait_ms to long-poll until the run is terminal. The raw report, observed text, paths, stdout and stderr stay local unless protected export was enabled at start.",
		input: inputGetRunReport, success: runReportSchema(t.opts.AllowProtectedExport), precheck: runIDFirst}, t.getRunReport)
}

// runIDFirst decides unsafe_run_id from the string alone, before the input
// schema is checked.
func runIDFirst(args map[string]any, _ *jsonschema.Resolved) *failure {
	if v, ok := args["run_id"].(string); ok && !flowrun.ValidRunID(v) {
		return fail(CodeUnsafeRunID)
	}
	return nil
}

// getRunReport resolves a run only through this server's run records and
// returns its frozen public outcome.
func (t *runTools) getRunReport(ctx context.Context, c *toolCall) (any, *failure) {
	runID, _ := c.args["run_id"].(string)
	r := t.manager.record(runID)
	if r == nil || !registryRunUsable(r) {
		return nil, fail(CodeReportUnavailable)
	}
	c.audit.RunID = &r.RunID
	if w, ok := c.args["wait_ms"].(float64); ok && w > 0 && r.Phase != runstore.PhaseTerminal {
		d := min(time.Duration(w)*time.Millisecond, maxWait)
		if r2 := t.manager.wait(ctx, c.req, runID, d); r2 != nil {
			r = r2
		}
	}
	out := t.projectReport(r)
	c.audit.Status = &out.Status
	return out, nil
}

// registryRunUsable applies the no-oracle rules: the record must name a
// workflow id and a run id of their own shapes.
func registryRunUsable(r *runstore.File) bool {
	return workflowid.Valid(r.WorkflowID) && flowrun.ValidRunID(r.RunID)
}
