package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestAdmissionsPerBundle verifies one generated ledger once and asks it
// about several bundles: the admitted one, an unknown one, a malformed query.
func TestAdmissionsPerBundle(t *testing.T) {
	const other = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	dir, r := generate(t, genOptions(t))
	v, err := NewVerifier(Trust{SignerRegistryIdentities: []string{r.SignerIdentity}}, WithAt(genAt))
	if err != nil {
		t.Fatal(err)
	}
	a, err := v.Admissions(context.Background(), Path(filepath.Join(dir, wfDoc)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Result() == nil || a.Result().Integrity == IntegrityFailed {
		t.Fatalf("verification: %+v", a.Result())
	}
	for _, c := range []struct {
		q    GateQuery
		want [3]string
	}{
		{GateQuery{BundleSHA256: genBundle}, [3]string{"admitted", "", ""}},
		{GateQuery{BundleSHA256: other}, [3]string{"not_admitted", "missing", "no_admission_for_bundle"}},
		{GateQuery{BundleSHA256: genBundle, Profile: ProfileRegulated}, [3]string{"admitted", "", ""}},
		{GateQuery{BundleSHA256: other, Profile: ProfileDemo}, [3]string{"exempt", "", "demo_profile"}},
	} {
		d, err := a.Decide(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]string{d.Decision, d.ReasonCode(), d.DetailCode()}; got != c.want {
			t.Errorf("%+v: got %v, want %v", c.q, got, c.want)
		}
	}
	if _, err := a.Decide(GateQuery{BundleSHA256: "sha256:nothex"}); !errors.Is(err, ErrOption) {
		t.Fatalf("bad digest: %v", err)
	}
}

// TestAdmissionsGlobalChecks: a ledger-wide failure (here the embedded
// snapshot's unattributed rows) refuses every
// bundle, and a source without a workflow document is an error per query.
func TestAdmissionsGlobalChecks(t *testing.T) {
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	v, err := NewVerifier(DefaultTrust(), WithAt(at))
	if err != nil {
		t.Fatal(err)
	}
	a, err := v.Admissions(context.Background(), Embedded())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{genBundle, "sha256:3333333333333333333333333333333333333333333333333333333333333333"} {
		d, err := a.Decide(GateQuery{BundleSHA256: b})
		if err != nil || d.Admitted() || d.DetailCode() != "ledger_row_unattributed" {
			t.Fatalf("%s: %+v %v", b, d, err)
		}
	}
	rel, err := v.Admissions(context.Background(), Path(filepath.Join("..", "testdata", "ledger", "extra", "production-lifecycle-admissions.subset-agent-openadapt.json")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Decide(GateQuery{BundleSHA256: genBundle}); !errors.Is(err, ErrNoWorkflowDocument) {
		t.Fatalf("release ledger only: %v", err)
	}
}
