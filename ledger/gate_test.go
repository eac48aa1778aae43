package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

// TestGateGenerated answers admission queries against generated workflow
// ledgers.
func TestGateGenerated(t *testing.T) {
	const other = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	cases := []struct {
		name    string
		mutate  func(o *lg.Options)
		q       GateQuery
		want    [3]string // decision, reason, detail
		profile string
	}{
		{name: "admitted", q: GateQuery{BundleSHA256: genBundle}, want: [3]string{"admitted", "", ""}},
		{name: "admitted with the right label", q: GateQuery{BundleSHA256: genBundle, BundleVersion: "1.0.0"}, want: [3]string{"admitted", "", ""}},
		{name: "label differs", q: GateQuery{BundleSHA256: genBundle, BundleVersion: "1.0.1"}, want: [3]string{"not_admitted", "mismatched", "bundle_version_differs"}},
		{name: "digest differs, label known", q: GateQuery{BundleSHA256: other, BundleVersion: "2.0.0"}, want: [3]string{"not_admitted", "mismatched", "bundle_sha256_differs"}},
		{name: "unknown bundle", q: GateQuery{BundleSHA256: other}, want: [3]string{"not_admitted", "missing", "no_admission_for_bundle"}},
		{name: "regulated needs admission too", q: GateQuery{BundleSHA256: other, Profile: ProfileRegulated}, want: [3]string{"not_admitted", "missing", "no_admission_for_bundle"}},
		{name: "demo is exempt", q: GateQuery{BundleSHA256: other, Profile: ProfileDemo}, want: [3]string{"exempt", "", "demo_profile"}},
		{name: "bundle failed to verify", q: GateQuery{BundleErrorKind: "asset_missing"}, want: [3]string{"not_admitted", "unverifiable", "bundle_asset_missing"}},
		{name: "latest admission of the bundle expired: no fallback",
			mutate: func(o *lg.Options) {
				o.Workflows = append(o.Workflows, lg.WorkflowSpec{BundleSHA256: genBundle, BundleVersion: "1.0.0",
					Issued: genNow.Add(-5 * 24 * time.Hour), Expires: tp(genNow.Add(-24 * time.Hour))})
			},
			q: GateQuery{BundleSHA256: genBundle}, want: [3]string{"not_admitted", "expired", "expired"}},
		{name: "revoked", mutate: func(o *lg.Options) {
			o.Hooks.R2 = func(r *lg.Root) []any {
				return []any{revocation(kWf, r.Workflows[0].Entry["object_sha256"].(string))}
			}
		}, q: GateQuery{BundleSHA256: genBundle}, want: [3]string{"not_admitted", "revoked", "admission_revoked"}},
		{name: "any row unattributed", mutate: after(func(r *lg.Root) { delete(r.Files, lg.Path(r.Workflows[1].Entry)) }),
			q: GateQuery{BundleSHA256: genBundle}, want: [3]string{"not_admitted", "unverifiable", "ledger_row_unattributed"}},
		{name: "ledger fails verification", mutate: after(func(r *lg.Root) { r.Registry["registry_head_sha256"] = lg.Fake("x") }),
			q: GateQuery{BundleSHA256: genBundle}, want: [3]string{"not_admitted", "unverifiable", "registry_head_invalid"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := genOptions(t)
			if c.mutate != nil {
				c.mutate(&o)
			}
			dir, r := generate(t, o)
			v, err := NewVerifier(Trust{SignerRegistryIdentities: []string{r.SignerIdentity}}, WithAt(genAt))
			if err != nil {
				t.Fatal(err)
			}
			d, err := v.Gate(context.Background(), Path(filepath.Join(dir, wfDoc)), c.q)
			if err != nil {
				t.Fatal(err)
			}
			got := [3]string{d.Decision, d.ReasonCode(), d.DetailCode()}
			if got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
			// The per-bundle decisions of one verification give the same
			// answer, field for field.
			a, err := v.Admissions(context.Background(), Path(filepath.Join(dir, wfDoc)))
			if err != nil {
				t.Fatal(err)
			}
			if d2, err := a.Decide(c.q); err != nil || !reflect.DeepEqual(d, d2) {
				t.Errorf("Admissions.Decide %+v, %v; Gate %+v", d2, err, d)
			}
			if (d.Decision == DecisionAdmitted) != (d.AdmissionID != nil) {
				t.Errorf("admission id %v with decision %s", d.AdmissionID, d.Decision)
			}
		})
	}
}

// TestCheckWorkflowAdmission covers serve's one call on the embedded
// snapshot: it admits no customer bundle, and input errors are errors.
func TestCheckWorkflowAdmission(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	d, err := CheckWorkflowAdmission(ctx, Embedded(), genBundle, "", at)
	if err != nil {
		t.Fatal(err)
	}
	if d.Admitted() || d.ReasonCode() != ReasonUnverifiable || d.DetailCode() != "ledger_row_unattributed" || d.Profile != ProfileStandard {
		t.Fatalf("embedded snapshot: %+v", d)
	}
	sub := filepath.Join("..", "testdata", "ledger", "extra", "production-workflow-admissions.subset-row1.json")
	if _, err := CheckWorkflowAdmission(ctx, Path(sub), genBundle, "", at); err != nil {
		// The subset's evidence root is the snapshot, not the file's folder:
		// without it every row is unverifiable, which is still a verdict.
		t.Fatal(err)
	}
	if _, err := CheckWorkflowAdmission(ctx, Embedded(), "sha256:nothex", "", at); !errors.Is(err, ErrOption) {
		t.Fatalf("bad digest: %v", err)
	}
	if _, err := CheckWorkflowAdmission(ctx, Path(filepath.Join("..", "testdata", "ledger", "extra", "production-lifecycle-admissions.subset-agent-openadapt.json")), genBundle, "", at); !errors.Is(err, ErrNoWorkflowDocument) {
		t.Fatalf("release ledger only: %v", err)
	}
	if _, err := CheckWorkflowAdmission(ctx, Path("does-not-exist"), genBundle, "", at); !errors.Is(err, ErrInput) {
		t.Fatalf("missing path: %v", err)
	}
}

// TestGateNeverExemptsTutorial: the ledger has no compiled-in tutorial
// allowlist. Under standard and regulated, neither the live synthetic
// digests nor the 0.0.0-synthetic label is ever exempt; the tutorial's
// exemption lives in serve, bound to the digest that server prepared.
func TestGateNeverExemptsTutorial(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	v, err := NewVerifier(DefaultTrust(), WithAt(at))
	if err != nil {
		t.Fatal(err)
	}
	digests := []string{
		"sha256:5fc904f1aef4d7ef01c46141223ffd6f9269d4efc15934aaf3c0c042c56fefff",
		"sha256:3333333333333333333333333333333333333333333333333333333333333333",
	}
	for _, d := range digests {
		for _, p := range []string{ProfileStandard, ProfileRegulated} {
			for _, label := range []string{"", "0.0.0-synthetic"} {
				dec, err := v.Gate(ctx, Embedded(), GateQuery{BundleSHA256: d, BundleVersion: label, Profile: p})
				if err != nil {
					t.Fatal(err)
				}
				if dec.Decision == DecisionExempt || dec.DetailCode() == "synthetic_tutorial" {
					t.Errorf("%s %s %q: %+v", d, p, label, dec)
				}
			}
		}
	}
}

func TestUnattributedRowsEmbedded(t *testing.T) {
	v, err := NewVerifier(DefaultTrust())
	if err != nil {
		t.Fatal(err)
	}
	res, err := v.Verify(context.Background(), Embedded())
	if err != nil {
		t.Fatal(err)
	}
	// The embedded snapshot: 6 of its 7 workflow rows reference objects that
	// OpenAdapt's public index lacks, so they cannot be attributed.
	if got := res.UnattributedRows(); got != 6 {
		t.Fatalf("UnattributedRows = %d, want 6", got)
	}
	if got := (&Result{}).UnattributedRows(); got != 0 {
		t.Fatalf("empty result: UnattributedRows = %d, want 0", got)
	}
}
