package serve

import (
	"context"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// The workflow tools: list_workflows (§5.1), search_workflows (§5.7) and
// get_workflow with its certification (§5.2).

func (s *Server) listWorkflows(context.Context, *toolCall) (any, *failure) {
	out := listWorkflowsP{
		listingHeadP: s.listingHead(),
		Workflows:    make([]workflowP, 0, len(s.cat.workflows)),
		Note:         s.note(),
		Protected:    s.listingProtected(),
	}
	for _, w := range s.cat.workflows {
		out.Workflows = append(out.Workflows, s.projectWorkflow(w))
	}
	return out, nil
}

func (s *Server) searchWorkflows(_ context.Context, c *toolCall) (any, *failure) {
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
	matches := s.cat.search(terms, availOnly, s.opts.AllowProtectedExport, s.prep.labels)
	out := searchWorkflowsP{
		listingHeadP: s.listingHead(),
		TotalMatches: len(matches),
		Workflows:    []workflowP{},
		Note:         s.note(),
		Protected:    s.listingProtected(),
	}
	if offset > len(matches) {
		offset = len(matches)
	}
	end := min(offset+limit, len(matches))
	for _, w := range matches[offset:end] {
		out.Workflows = append(out.Workflows, s.projectWorkflow(w))
	}
	if end < len(matches) {
		next := encodeCursor(end, binding)
		out.NextCursor = &next
	}
	return out, nil
}

func (s *Server) getWorkflow(ctx context.Context, c *toolCall) (any, *failure) {
	id, _ := c.args["workflow"].(string)
	w := s.cat.lookup(id)
	if w == nil {
		return nil, fail(CodeUnknownWorkflow)
	}
	c.audit.WorkflowID = &w.id
	p := s.projectWorkflow(w)
	out := getWorkflowP{workflowCoreP: p.workflowCoreP, Protected: p.Protected}
	if w.available {
		out.SchemaVersion = w.schemaVersion
	}
	out.Certification = s.certify(ctx, w)
	return out, nil
}

// certify runs `flow certify` for get_workflow when a policy or config is
// set (§5.2).
func (s *Server) certify(ctx context.Context, w *workflow) certificationP {
	notEval := certificationP{Certified: nil, Message: certNotEvaluated}
	if !w.available {
		c := certificationP{Certified: nil, Message: certNotLoaded}
		if s.opts.AllowProtectedExport {
			c.Protected = &certProtectedP{Detail: ""}
		}
		return c
	}
	if s.opts.Policy == "" && s.opts.Config == "" {
		if s.opts.AllowProtectedExport {
			notEval.Protected = &certProtectedP{Detail: ""}
		}
		return notEval
	}
	flow, err := s.resolveFlow()
	if err != nil {
		if s.opts.AllowProtectedExport {
			notEval.Protected = &certProtectedP{Detail: "openadapt-flow was not found."}
		}
		return notEval
	}
	ex := flowrun.Exec(ctx, flowrun.Command{
		Args:    flowrun.CertifyArgs(flow, w.dir, s.opts.Policy, s.opts.Config),
		Env:     s.childEnv,
		Timeout: time.Duration(s.opts.Timeout * float64(time.Second)),
	})
	var c certificationP
	var code *int
	switch {
	case ex.TimedOut || ex.Canceled || ex.Err != nil:
		c = notEval
	case ex.Code == 0:
		c = certificationP{Certified: boolPtr(true), Message: certPassed}
		code = &ex.Code
	default:
		c = certificationP{Certified: boolPtr(false), Message: certNotPassed}
		code = &ex.Code
	}
	if s.opts.AllowProtectedExport {
		detail := ex.Stdout
		if detail == "" {
			detail = ex.Stderr
		}
		c.Protected = &certProtectedP{Certified: c.Certified, ExitCode: code, Detail: detail}
	}
	return c
}
