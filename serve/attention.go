package serve

import (
	"context"
	"maps"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// Needs Attention (§5.4, §5.5, §6.7), read natively and PHI-safe through
// internal/attention.

func (s *Server) listAttention(context.Context, *toolCall) (any, *failure) {
	items := attention.List(s.prep.runsDir)
	if items == nil {
		items = []attention.Item{}
	}
	// The wrapper fields follow helper liveness (flow-helper.md §2.9).
	enabled := s.opts.AllowAttendedActions && s.helper.alive()
	return queueP{OpenCount: len(items), ActionsEnabled: enabled, LiveActionsReady: enabled && s.helper.live, Items: items}, nil
}

// attentionIDNotFound makes a malformed id string one more "not found"
// (§5.5) when the arguments are otherwise valid; only a wrong type is
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

func (s *Server) getAttention(_ context.Context, c *toolCall) (any, *failure) {
	id, _ := c.args["attention_id"].(string)
	it, err := attention.Get(s.prep.runsDir, id)
	if err != nil {
		return nil, fail(CodeAttentionNotFound)
	}
	c.audit.AttentionID = &it.ID
	return it, nil
}

// attentionForRun is the fresh item for an agent run directory, or nil.
func (s *Server) attentionForRun(runID string) any {
	if it := attention.ForRun(s.prep.runsDir, runID); it != nil {
		return it
	}
	return nil
}
