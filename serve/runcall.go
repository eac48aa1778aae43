package serve

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"time"
	"unicode"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// The run call pipeline of §7.2, top to bottom. Step 1 (the name is
// registered and run tools are enabled) is the receiving middleware
// (dispatch.go); steps 6–8 end in the run manager (runmanager.go).

// runArgs are validated run arguments.
type runArgs struct {
	wf     *workflow
	params map[string]string
	url    *string // override, nil when absent
	idem   string
}

// runPerWorkflow is the handler of the run tool of one workflow (§5.6).
func (s *Server) runPerWorkflow(w *workflow) toolHandler {
	return func(ctx context.Context, c *toolCall) (any, *failure) {
		if f := s.refuseURL(c.args); f != nil {
			return nil, f
		}
		flat := map[string]any{}
		for k, v := range c.args {
			if k != "url" && k != "idempotency_key" {
				flat[k] = v
			}
		}
		return s.runCall(ctx, c, w, flat)
	}
}

// runCatalog is run_workflow's handler (§5.8): the workflow is an argument.
func (s *Server) runCatalog(ctx context.Context, c *toolCall) (any, *failure) {
	if f := s.refuseURL(c.args); f != nil {
		return nil, f
	}
	for k := range c.args {
		switch k {
		case "workflow_id", "params", "url", "idempotency_key":
		default:
			return nil, fail(CodeInvalidArguments)
		}
	}
	id, ok := c.args["workflow_id"].(string)
	if !ok {
		return nil, fail(CodeInvalidArguments)
	}
	flat, ok := c.args["params"].(map[string]any)
	if !ok {
		return nil, fail(CodeInvalidArguments)
	}
	w := s.cat.lookup(id)
	if w == nil {
		return nil, fail(CodeUnknownWorkflow)
	}
	if !w.available {
		return nil, fail(CodeWorkflowUnavailable)
	}
	return s.runCall(ctx, c, w, flat)
}

// refuseURL is checked before anything else: a url argument, whatever its
// value, when per-call URLs are off.
func (s *Server) refuseURL(args map[string]any) *failure {
	if _, has := args["url"]; has && !s.opts.AllowURLOverride {
		return fail(CodeURLOverrideRefused)
	}
	return nil
}

// runCall is §7.2 steps 2–9 for workflow w with parameters flat.
func (s *Server) runCall(ctx context.Context, c *toolCall, w *workflow, flat map[string]any) (any, *failure) {
	// 2. argument validation
	ra, f := s.runArguments(w, flat, c.args)
	if f != nil {
		return nil, f
	}
	c.audit.WorkflowID = &w.id
	// 3. idempotency lookup
	var digest string
	if ra.idem != "" {
		digest = s.bindings.Digest(w.baseID, ra.params, ra.url)
		if out, f, hit := s.replayBound(ctx, c, ra.idem, digest); hit {
			return out, f
		}
	}
	// 4. a fresh full verification of this bundle, then the admission gate
	if f := s.admitRun(w); f != nil {
		return nil, f
	}
	// 5. resolve Flow
	flow, err := s.resolveFlow()
	if err != nil {
		return nil, fail(CodeFlowNotFound)
	}
	// 6. reserve: the run is known to this server before its key is bound
	// (an identical call that finds the binding waits on it in memory),
	// then the binding is published and the running record written
	runID := flowrun.NewRunID()
	lr := s.runs.reserve(runID, w)
	if ra.idem != "" {
		err := s.bindings.Publish(ra.idem, runstore.Binding{Digest: digest, RunID: runID, CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)})
		if err != nil {
			s.runs.abandon(lr)
		}
		if errors.Is(err, fs.ErrExist) {
			// A concurrent identical call won the race: this one replays.
			if out, f, hit := s.replayBound(ctx, c, ra.idem, digest); hit {
				return out, f
			}
			return nil, fail(CodeInternalError)
		} else if err != nil {
			return nil, fail(CodeInternalError)
		}
	}
	c.audit.RunID = &runID
	// 7–8. the parameter file and the spawn belong to the run manager
	if err := s.runs.start(lr, ra, flow); err != nil {
		// The record could not be written, so nothing was spawned; a key
		// bound above stays bound forever.
		return nil, fail(CodeInternalError)
	}
	// 9. wait for the run's own answer, then R
	return s.project(c, s.runs.waitRun(ctx, c.req, lr, s.runWait()), false)
}

// runArguments applies §5.6's argument rules to a run call: flat holds the
// workflow parameters, args the whole call (url, idempotency_key).
func (s *Server) runArguments(w *workflow, flat, args map[string]any) (*runArgs, *failure) {
	ra := &runArgs{wf: w, params: map[string]string{}}
	declared := map[string]bool{}
	for _, p := range w.params {
		declared[p] = true
	}
	unknown, badValue := 0, false
	for k, v := range flat {
		if !declared[k] {
			unknown++
			continue
		}
		str, ok := v.(string)
		if !ok {
			badValue = true
			continue
		}
		ra.params[k] = str
	}
	var missing []string
	if !s.opts.AllowSyntheticRecordedDefaults {
		for _, p := range w.params {
			if _, ok := flat[p]; !ok {
				missing = append(missing, p)
			}
		}
	}
	if unknown > 0 || badValue || len(missing) > 0 {
		return nil, invalidArgumentsFailure(missing, unknown)
	}
	if v, has := args["url"]; has {
		u, ok := v.(string)
		if !ok {
			return nil, fail(CodeInvalidArguments)
		}
		if u != "" {
			if !validOverrideURL(u) {
				return nil, fail(CodeInvalidArguments)
			}
			ra.url = &u
		}
	}
	if v, has := args["idempotency_key"]; has {
		k, ok := v.(string)
		if !ok || !idemKeyRE().MatchString(k) {
			return nil, fail(CodeInvalidArguments)
		}
		ra.idem = k
	}
	return ra, nil
}

func validOverrideURL(s string) bool {
	if len(s) > 2048 {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "" {
		return false
	}
	return true
}

// replayBound looks key up (§7.3): hit is false when it is not bound yet;
// otherwise the answer is the replay of the bound run, or
// idempotency_conflict for a different call, or internal_error for a
// binding that cannot be read.
func (s *Server) replayBound(ctx context.Context, c *toolCall, key, digest string) (out any, f *failure, hit bool) {
	b, err := s.bindings.Lookup(key)
	switch {
	case err != nil:
		return nil, fail(CodeInternalError), true
	case b == nil:
		return nil, nil, false
	case b.Digest != digest:
		return nil, fail(CodeIdempotencyConflict), true
	}
	// R is rebuilt from the run record with replayed true; a running run is
	// waited for like a fresh call.
	t := true
	c.audit.Replayed = &t
	c.audit.RunID = &b.RunID
	out, f = s.project(c, s.runs.wait(ctx, c.req, b.RunID, s.runWait()), true)
	return out, f, true
}

// admitRun is §7.2 step 4: the bundle is verified afresh at this call, then
// the admission gate (§7.5) answers when it is on.
func (s *Server) admitRun(w *workflow) *failure {
	if s.isTutorial(w) {
		return s.admitTutorial(w)
	}
	bundleSHA, verified := s.verifyForRun(w)
	switch {
	case !s.gateOn() && verified:
		return nil
	case !s.gateOn():
		return fail(CodeWorkflowUnavailable)
	case !verified:
		return failAdmission("unverifiable")
	}
	if reason, ok := s.admit(bundleSHA); !ok {
		return failAdmission(reason)
	}
	return nil
}

// runWait is --run-wait.
func (s *Server) runWait() time.Duration { return time.Duration(s.opts.RunWait) * time.Second }

// project builds R from a run's record after its wait (nil: the run has
// no record, internal_error).
func (s *Server) project(c *toolCall, r *runstore.File, replayed bool) (any, *failure) {
	if r == nil {
		return nil, fail(CodeInternalError)
	}
	out := s.projectRun(r, replayed)
	c.audit.Status = &out.Status
	return out, nil
}
