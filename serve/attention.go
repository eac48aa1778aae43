package serve

import "github.com/OpenAdaptAI/openadapt-agent/internal/attention"

// Needs Attention (§5.4, §5.5, §6.7), read natively and PHI-safe through
// internal/attention.

type queueP struct {
	OpenCount        int              `json:"open_count"`
	ActionsEnabled   bool             `json:"actions_enabled"`
	LiveActionsReady bool             `json:"live_actions_ready"`
	Items            []attention.Item `json:"items"`
}

func (s *Server) listAttention() (any, *failure) {
	items := attention.List(s.prep.runsDir)
	if items == nil {
		items = []attention.Item{}
	}
	return queueP{OpenCount: len(items), Items: items}, nil
}

func (s *Server) getAttention(args map[string]any, rec *auditRec) (any, *failure) {
	id, _ := args["attention_id"].(string)
	it, err := attention.Get(s.prep.runsDir, id)
	if err != nil {
		return nil, fail(CodeAttentionNotFound)
	}
	rec.AttentionID = &it.ID
	return it, nil
}

// attentionForRun is the fresh item for an agent run directory, or nil.
func (s *Server) attentionForRun(runID string) any {
	if it := attention.ForRun(s.prep.runsDir, runID); it != nil {
		return it
	}
	return nil
}
