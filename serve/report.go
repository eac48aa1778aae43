package serve

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

// maxWait is the get_run_report wait_ms bound (§5.3).
const maxWait = 25 * time.Second

// getRunReport resolves a run only through the agent registry (§5.3) and
// returns its frozen public outcome R′.
func (s *Server) getRunReport(ctx context.Context, req *mcp.CallToolRequest, args map[string]any, rec *auditRec) (any, *failure) {
	runID, _ := args["run_id"].(string)
	r := s.state.readRecordOrLive(s, runID)
	if r == nil || !s.registryRunUsable(r) {
		return nil, fail(CodeReportUnavailable)
	}
	rec.RunID = &r.RunID
	if w, ok := args["wait_ms"].(float64); ok && w > 0 && r.Phase != phaseTerminal {
		d := min(time.Duration(w)*time.Millisecond, maxWait)
		if r2 := s.waitRun(ctx, req, runID, d); r2 != nil {
			r = r2
		}
	}
	out := s.projectReport(r)
	rec.Status = &out.Status
	return out, nil
}

// registryRunUsable applies the no-oracle rules: the record must name a
// workflow id of its own shape and its run directory, when present, must be
// a real directory inside the root.
func (s *Server) registryRunUsable(r *runRecord) bool {
	return workflowIDRE.MatchString(r.WorkflowID) && runIDRE.MatchString(r.RunID)
}

func (s *Server) projectReport(r *runRecord) runReportP {
	o := s.projectRun(r, false, false)
	out := runReportP{
		SchemaVersion: 1, Status: o.Status, Success: o.Success, WorkflowID: o.WorkflowID, RunID: o.RunID,
		Message: o.Message, Summary: o.Summary, ExecutionOutcome: o.ExecutionOutcome, EffectVerified: o.EffectVerified,
		Sealed: false, RequiresSeal: true,
	}
	if s.opts.AllowProtectedExport {
		p := &reportProtectedP{RunDir: filepath.Join(s.prep.runsDir, r.RunID)}
		if data, state, _ := flowrun.ReadReport(s.prep.runsDir, r.RunID); state == flowrun.ReportPresent {
			if len(data) > 1<<20 {
				p.ReportOmitted = true
			} else {
				var v map[string]any
				if json.Unmarshal(data, &v) == nil {
					p.Report = v
				}
			}
		}
		out.Protected = p
	}
	return out
}
