package serve

// gate is the Standard/Regulated admission gate (§7.5).
type gate struct {
	s  *Server
	ok bool // the ledger verified
}

func newGate(s *Server) *gate {
	g := &gate{s: s}
	return g
}

func (g *gate) verified() bool { return g.ok }

// gateOn reports whether the effective profile is standard or regulated.
func (s *Server) gateOn() bool {
	return s.prep.profile == ProfileStandard || s.prep.profile == ProfileRegulated
}

// admit answers the gate for a run of w at this call: ok, or the reason
// token of the refusal.
func (s *Server) admit(bundleSHA256 string) (reason string, ok bool) {
	return "unverifiable", false
}

// listingAdmitted is P's admission state for listing; it may use the
// listing-level verification.
func (s *Server) listingAdmitted(w *workflow) bool {
	return false
}
