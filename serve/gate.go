package serve

import (
	"context"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// gate is the Standard/Regulated admission gate (docs/mcp.md "Effective
// profile"; docs/ledger.md): `--ledger PATH` when given, else the embedded
// snapshot, through the ledger package. serve holds no ledger rule: every
// decision is ledger's.
type gate struct {
	profile string // the effective profile
	src     ledger.Source
	ok      bool // the ledger verified at startup
	// listing is the ledger's per-bundle decisions from the startup
	// verification. It serves the listing's admission field only; a run
	// always asks the ledger afresh.
	listing *ledger.Admissions
}

// newGate verifies the ledger once at startup when the gate is on. A
// ledger that fails verification is not a startup error: every run is
// then refused with admission_required.
func newGate(profile, ledgerPath string) *gate {
	g := &gate{profile: profile, src: ledger.Embedded()}
	if ledgerPath != "" {
		g.src = ledger.Path(ledgerPath)
	}
	if !g.on() {
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

// on reports whether the effective profile is standard or regulated.
func (g *gate) on() bool {
	return g.profile == ProfileStandard || g.profile == ProfileRegulated
}

// name is the gate as the banner and the listings name it: the profile,
// or "off".
func (g *gate) name() string {
	if g.on() {
		return g.profile
	}
	return "off"
}

// admit answers the gate for a run at this call: the bundle's freshly
// verified bundle_sha256 against the ledger, verified now with the windows
// checked at the current time. It returns ok, or the reason token.
func (g *gate) admit(bundleSHA256 string) (reason string, ok bool) {
	if !g.ok {
		return "unverifiable", false
	}
	// The ledger is verified afresh at this call, so the not-before and
	// expiry windows are checked against the current clock.
	v, err := ledger.NewVerifier(trust(), ledger.WithAt(time.Now()))
	if err != nil {
		return "unverifiable", false
	}
	d, err := v.Gate(context.Background(), g.src, ledger.GateQuery{BundleSHA256: bundleSHA256, Profile: ledger.ProfileStandard})
	if err != nil {
		return "unverifiable", false
	}
	if d.Admitted() {
		return "", true
	}
	return d.ReasonCode(), false
}

// listingAdmitted is the listing's admission state: the ledger's decision
// for the bundle at startup, global checks included.
func (g *gate) listingAdmitted(w *workflow) bool {
	if g.listing == nil {
		return false
	}
	d, err := g.listing.Decide(ledger.GateQuery{BundleSHA256: "sha256:" + w.contentDigest, Profile: ledger.ProfileStandard})
	return err == nil && d.Decision == ledger.DecisionAdmitted
}
