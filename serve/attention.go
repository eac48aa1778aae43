package serve

// Needs Attention projection (§5.4, §5.5, §6.7), read natively through
// internal/attention.

type queueP struct {
	OpenCount        int   `json:"open_count"`
	ActionsEnabled   bool  `json:"actions_enabled"`
	LiveActionsReady bool  `json:"live_actions_ready"`
	Items            []any `json:"items"`
}

func (s *Server) listAttention() (any, *failure) {
	return queueP{Items: []any{}}, nil
}

func (s *Server) getAttention(args map[string]any, rec *auditRec) (any, *failure) {
	return nil, fail(CodeAttentionNotFound)
}

// attentionForRun is the fresh item for an agent run directory, or nil.
func (s *Server) attentionForRun(runID string) any {
	return nil
}
