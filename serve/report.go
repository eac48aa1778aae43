package serve

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// get_run_report (§5.3).

// maxWait is the get_run_report wait_ms bound (§5.3).
const maxWait = 25 * time.Second

// runIDFirst decides unsafe_run_id from the string alone, before the input
// schema is checked.
func runIDFirst(args map[string]any, _ *jsonschema.Resolved) *failure {
	if v, ok := args["run_id"].(string); ok && !flowrun.ValidRunID(v) {
		return fail(CodeUnsafeRunID)
	}
	return nil
}

// getRunReport resolves a run only through the agent registry (§5.3) and
// returns its frozen public outcome R′.
func (s *Server) getRunReport(ctx context.Context, c *toolCall) (any, *failure) {
	runID, _ := c.args["run_id"].(string)
	r := s.runs.record(runID)
	if r == nil || !registryRunUsable(r) {
		return nil, fail(CodeReportUnavailable)
	}
	c.audit.RunID = &r.RunID
	if w, ok := c.args["wait_ms"].(float64); ok && w > 0 && r.Phase != runstore.PhaseTerminal {
		d := min(time.Duration(w)*time.Millisecond, maxWait)
		if r2 := s.runs.wait(ctx, c.req, runID, d); r2 != nil {
			r = r2
		}
	}
	out := s.projectReport(r)
	c.audit.Status = &out.Status
	return out, nil
}

// registryRunUsable applies the no-oracle rules: the record must name a
// workflow id and a run id of their own shapes.
func registryRunUsable(r *runstore.File) bool {
	return workflowid.Valid(r.WorkflowID) && flowrun.ValidRunID(r.RunID)
}
