package ledger

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

// genNow is the generation instant; genAt is T for verification.
var (
	genNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	genAt  = genNow
)

const genBundle = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// staticTargets reads the projection's static fields from the public vector.
func staticTargets(t testing.TB) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "ledger", "snapshot", "public", "production-lifecycle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Targets []map[string]any `json:"targets"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, tm := range p.Targets {
		delete(tm, "admission_history")
		delete(tm, "latest_admission")
		out[tm["id"].(string)] = tm
	}
	return out
}

// genOptions is the default generated evidence root: all seven targets at
// sequence 1 and two workflow admissions.
func genOptions(t testing.TB) ledgergen.Options {
	return ledgergen.Options{
		Now: genNow,
		Workflows: []ledgergen.WorkflowSpec{
			{BundleSHA256: genBundle, BundleVersion: "1.0.0", Issued: genNow.Add(-20 * 24 * time.Hour)},
			{BundleSHA256: "sha256:2222222222222222222222222222222222222222222222222222222222222222", BundleVersion: "2.0.0", Issued: genNow.Add(-10 * 24 * time.Hour)},
		},
		StaticTargets: staticTargets(t),
	}
}

// generate writes a generated evidence root to a temp dir.
func generate(t testing.TB, o ledgergen.Options) (string, *ledgergen.Root) {
	t.Helper()
	r := ledgergen.Generate(o)
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

// verifyGenerated verifies one document of a generated root, pinned to its
// signer registry.
func verifyGenerated(t testing.TB, dir string, r *ledgergen.Root, doc string, opts ...Option) *Result {
	t.Helper()
	v, err := NewVerifier(Trust{SignerRegistryIdentities: []string{r.SignerIdentity}},
		append([]Option{WithAt(genAt), WithEvidenceRoot(dir)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p := dir
	if doc != "" {
		p = filepath.Join(dir, doc)
	}
	res, err := v.Verify(context.Background(), Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGeneratedRootVerifies(t *testing.T) {
	dir, r := generate(t, genOptions(t))
	res := verifyGenerated(t, dir, r, "")
	if res.Integrity != IntegrityVerified || res.ExitCode != 0 {
		var b strings.Builder
		_ = res.WriteText(&b)
		t.Fatalf("integrity %s exit %d\n%s%v", res.Integrity, res.ExitCode, b.String(), res.Documents)
	}
	for _, tr := range res.Targets {
		if tr.Verdict != VerdictActive {
			t.Errorf("target %s: %s %s %s", tr.Target, tr.Verdict, deref(tr.Reason), deref(tr.Detail))
		}
	}
	if res.Product == nil || res.Product.Verdict != "production" {
		t.Errorf("product %+v", res.Product)
	}
	if len(res.WorkflowAdmissions) != 2 {
		t.Fatalf("workflow rows: %d", len(res.WorkflowAdmissions))
	}
	for _, w := range res.WorkflowAdmissions {
		if w.Verdict != VerdictActive {
			t.Errorf("row %d: %s %s", w.Index, deref(w.Reason), deref(w.Detail))
		}
	}
	// The default pin (OpenAdapt's) does not cover the test signer registry.
	v, _ := NewVerifier(DefaultTrust(), WithAt(genAt))
	res, err := v.Verify(context.Background(), Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if d := deref(res.Targets[0].Detail); d != "signer_registry_not_pinned" {
		t.Errorf("default pin: detail %q", d)
	}
}
