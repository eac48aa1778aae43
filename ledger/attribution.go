package ledger

// UnattributedRows counts the workflow rows that cannot be attributed to a
// bundle (docs/ledger.md, Chain and lifecycle). When it is not zero, the
// workflow ledger admits nothing: the gate answers every admission query with
// unverifiable/ledger_row_unattributed, whatever the bundle. Callers use it
// to say so in one plain sentence instead of leaving the user to infer it
// from a table.
func (r *Result) UnattributedRows() int {
	n := 0
	for _, w := range r.WorkflowAdmissions {
		if !w.attributed {
			n++
		}
	}
	return n
}
