package attention

// RunDir returns the run directory (root joined with its scanned relative
// path) whose attention id is id, whether or not it still produces an item.
// Only a directory a fresh scan yields, resolving strictly inside the root,
// is returned, so a crafted id never names a path. It serves a
// byte-identical attended replay after an item closed ([Decider.Replay]),
// the next_transition check and `attention list --protected`: they read,
// never write, Flow's files there.
func RunDir(root, id string) (string, bool) {
	if !ValidID(id) {
		return "", false
	}
	s, ok := newScanner(root)
	if !ok {
		return "", false
	}
	for _, rel := range s.runDirs() {
		if ID(rel) == id {
			return s.inside(rel)
		}
	}
	return "", false
}
