package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// TestAdmissionGateAdmits uses a generated evidence root, pinned through the
// test-only trust, that admits one bundle's exact content digest: that run
// proceeds, another bundle is refused with reason missing, and nothing
// starts for it.
func TestAdmissionGateAdmits(t *testing.T) {
	e := newEnv(t)
	b, now := e.admittedBundle("g1")
	e.demo("other", testBundle{params: map[string]string{"note": "x", "scenario": "y"}, salt: "g2"})
	r := ledgergen.Generate(ledgergen.Options{
		Now:       now,
		Workflows: []ledgergen.WorkflowSpec{{BundleSHA256: b.BundleSHA256(), BundleVersion: "1.0.0", Issued: now.Add(-time.Hour)}},
	})
	ledgerDir, o := e.standardWithLedger(r)
	s := start(t, o)
	if strings.Contains(s.srv.Banner(), "unverified") || strings.Contains(s.srv.Banner(), "embedded") {
		t.Fatalf("banner: %s", s.srv.Banner())
	}
	states := map[string]string{}
	for _, w := range s.call("list_workflows", nil)["workflows"].([]any) {
		m := w.(map[string]any)
		states[m["id"].(string)] = m["admission"].(string)
	}
	admittedTool := "run_" + b.ID
	if states[b.ID] != "active" {
		t.Fatalf("listing admission %v (admitted %s)", states, b.ID)
	}
	r1 := s.call(admittedTool, map[string]any{"note": "a", "scenario": "report=standard-halted;exit=1"})
	if r1["status"] != "halt" {
		t.Fatalf("admitted run: %v", r1)
	}
	for name := range s.tools {
		if strings.HasPrefix(name, "run_") && name != admittedTool {
			f := s.call(name, map[string]any{"note": "a", "scenario": "exit=0"})
			if errorCode(f) != "admission_required" || !strings.Contains(f["error"].(map[string]any)["message"].(string), "(ledger reason: missing)") {
				t.Fatalf("other bundle: %v", f)
			}
			out, _ := json.Marshal(f)
			if strings.Contains(string(out), "sha256") || strings.Contains(string(out), ledgerDir) {
				t.Fatalf("refusal leaks detail: %s", out)
			}
		}
	}
	e.wantRuns(1)
	// A ledger whose signature no longer verifies refuses every run.
	r.FlipByte(r.SignerPath)
	os.RemoveAll(ledgerDir)
	if err := r.Write(ledgerDir); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, o)
	if !strings.Contains(s2.srv.Banner(), "(ledger unverified: every run is refused)") {
		t.Fatalf("banner: %s", s2.srv.Banner())
	}
	f := s2.call(admittedTool, map[string]any{"note": "a", "scenario": "exit=0"})
	if errorCode(f) != "admission_required" || !strings.Contains(f["error"].(map[string]any)["message"].(string), "(ledger reason: unverifiable)") {
		t.Fatalf("tampered ledger: %v", f)
	}
}

// TestAdmissionListingGlobalChecks: the listing's
// admission state is the ledger's decision, so a ledger-wide check
// (here one workflow row whose object is missing: "any row unattributed")
// shows even an otherwise admitted bundle as not actively admitted, the
// same answer its run gets. serve's old listing read the latest row alone
// and showed it active.
func TestAdmissionListingGlobalChecks(t *testing.T) {
	e := newEnv(t)
	b, now := e.admittedBundle("u1")
	r := ledgergen.Generate(ledgergen.Options{
		Now: now,
		Workflows: []ledgergen.WorkflowSpec{
			{BundleSHA256: b.BundleSHA256(), BundleVersion: "1.0.0", Issued: now.Add(-time.Hour)},
			{BundleSHA256: ledgergen.Fake("another bundle"), BundleVersion: "2.0.0", Issued: now.Add(-time.Hour)},
		},
		Hooks: ledgergen.Hooks{AfterBuild: func(r *ledgergen.Root) { delete(r.Files, ledgergen.Path(r.Workflows[1].Entry)) }},
	})
	_, o := e.standardWithLedger(r)
	s := start(t, o)
	ws := s.call("list_workflows", nil)["workflows"].([]any)
	if len(ws) != 1 || ws[0].(map[string]any)["admission"] != "not_actively_admitted" {
		t.Fatalf("listing: %v", ws)
	}
	f := s.call("run_"+b.ID, map[string]any{"note": "a", "scenario": "exit=0"})
	if errorCode(f) != "admission_required" || !strings.Contains(f["error"].(map[string]any)["message"].(string), "(ledger reason: unverifiable)") {
		t.Fatalf("run: %v", f)
	}
	e.wantRuns(0)
}

// admittedBundle writes the bundle "admitted" (params note and scenario,
// salt salt) and returns it loaded and verified, with the time the
// generated ledger is issued against.
func (e *env) admittedBundle(salt string) (*bundle.Bundle, time.Time) {
	e.t.Helper()
	b, err := bundle.Load(e.demo("admitted", testBundle{params: map[string]string{"note": "x", "scenario": "y"}, salt: salt}))
	if err != nil || !b.Verified() {
		e.t.Fatal(err)
	}
	return b, time.Now().UTC()
}

// standardWithLedger writes r as the evidence root, pins its signer through
// the test-only trust for the test, and returns run-enabled standard-profile
// options that name it.
func (e *env) standardWithLedger(r *ledgergen.Root) (string, Options) {
	e.t.Helper()
	ledgerDir := filepath.Join(e.root, "evidence")
	if err := r.Write(ledgerDir); err != nil {
		e.t.Fatal(err)
	}
	testOnlyTrust = &ledger.Trust{SignerRegistryIdentities: []string{r.SignerIdentity}}
	e.t.Cleanup(func() { testOnlyTrust = nil })
	o := e.opts()
	o.AllowRun = true
	o.Ledger = ledgerDir
	o.ExtraRunArgs = []string{"--profile=standard"}
	return ledgerDir, o
}
