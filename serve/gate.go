package serve

import (
	"context"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// gate is the Standard/Regulated admission gate (§7.5): `--ledger PATH` when
// given, else the embedded snapshot, through the ledger package. serve
// holds no ledger rule: every decision is ledger's.
type gate struct {
	s   *Server
	src ledger.Source
	ok  bool // the ledger verified at startup
	// listing is the ledger's per-bundle decisions from the startup
	// verification. It serves P's admission field only; a run always asks
	// the ledger afresh.
	listing *ledger.Admissions
}

// newGate verifies the ledger once at startup when the gate is on (§1.5
// step 8). A ledger that fails verification is not a startup error: every
// run is then refused with admission_required.
func newGate(s *Server) *gate {
	g := &gate{s: s, src: ledger.Embedded()}
	if s.opts.Ledger != "" {
		g.src = ledger.Path(s.opts.Ledger)
	}
	if !s.gateOn() {
		return g
	}
	v, err := ledger.NewVerifier(trust(), ledger.WithAt(time.Now()))
	if err != nil {
		return g
	}
	a, err := v.Admissions(context.Background(), g.src)
	if err != nil || a.Result().Integrity == ledger.IntegrityFailed {
		return g
	}
	g.ok, g.listing = true, a
	return g
}

func (g *gate) verified() bool { return g.ok }

// testOnlyTrust replaces the pinned trust root in tests of the gate with a
// generated evidence root (internal/testing/ledgergen).
var testOnlyTrust *ledger.Trust

func trust() ledger.Trust {
	if testOnlyTrust != nil {
		return *testOnlyTrust
	}
	return ledger.DefaultTrust()
}

// gateOn reports whether the effective profile is standard or regulated.
func (s *Server) gateOn() bool {
	return s.prep.profile == ProfileStandard || s.prep.profile == ProfileRegulated
}

// admit answers the gate for a run at this call: the bundle's freshly
// verified bundle_sha256 against the ledger, verified now with the windows
// checked at the current time. It returns ok, or the reason token.
func (s *Server) admit(bundleSHA256 string) (reason string, ok bool) {
	if !s.gate.ok {
		return "unverifiable", false
	}
	// The ledger is verified afresh at this call, so the not-before and
	// expiry windows are checked against the current clock (§7.5).
	v, err := ledger.NewVerifier(trust(), ledger.WithAt(time.Now()))
	if err != nil {
		return "unverifiable", false
	}
	d, err := v.Gate(context.Background(), s.gate.src, ledger.GateQuery{BundleSHA256: bundleSHA256, Profile: ledger.ProfileStandard})
	if err != nil {
		return "unverifiable", false
	}
	if d.Admitted() {
		return "", true
	}
	return d.ReasonCode(), false
}

// listingAdmitted is P's admission state for listing: the ledger's §15
// decision for the bundle at startup, global checks included.
func (s *Server) listingAdmitted(w *workflow) bool {
	if s.gate.listing == nil {
		return false
	}
	d, err := s.gate.listing.Decide(ledger.GateQuery{BundleSHA256: "sha256:" + w.contentDigest, Profile: ledger.ProfileStandard})
	return err == nil && d.Decision == ledger.DecisionAdmitted
}
