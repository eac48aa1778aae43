package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// TestGoldenOutput pins the human and JSON renderings of the public vectors
// (regenerate with go test ./ledger -update).
func TestGoldenOutput(t *testing.T) {
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	dir := filepath.Join("..", "testdata", "ledger")
	cases := []struct {
		name string
		src  Source
		opts []Option
	}{
		{"snapshot", Embedded(), nil},
		{"snapshot-strict", Embedded(), []Option{WithStrict()}},
		{"snapshot-require-production", Embedded(), []Option{WithRequireProduction(), WithRequireActive("agent")}},
		{"subset-release", Path(filepath.Join(dir, "extra", "production-lifecycle-admissions.subset-agent-openadapt.json")),
			[]Option{WithEvidenceRoot(filepath.Join(dir, "snapshot"))}},
		{"workflow-subset", Path(filepath.Join(dir, "extra", "production-workflow-admissions.subset-row1.json")),
			[]Option{WithEvidenceRoot(filepath.Join(dir, "snapshot"))}},
		{"history-rev4", Path(filepath.Join(dir, "extra", "history", "production-lifecycle.policy-rev4.flow-only.json")),
			[]Option{WithEvidenceRoot(filepath.Join(dir, "snapshot"))}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := NewVerifier(DefaultTrust(), append([]Option{WithAt(at)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := v.Verify(context.Background(), c.src)
			if err != nil {
				t.Fatal(err)
			}
			var txt bytes.Buffer
			if err := res.WriteText(&txt); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", c.name+".txt"), txt.Bytes())
			js, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "golden", c.name+".json"), append(js, '\n'))
		})
	}
	// The gate's rendering.
	v, _ := NewVerifier(DefaultTrust(), WithAt(at), WithEvidenceRoot(filepath.Join(dir, "snapshot")))
	res, err := v.Admission(context.Background(), Path(filepath.Join(dir, "extra", "production-workflow-admissions.subset-row1.json")),
		GateQuery{BundleSHA256: "sha256:5fc904f1aef4d7ef01c46141223ffd6f9269d4efc15934aaf3c0c042c56fefff", BundleVersion: "0.0.0-synthetic"})
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	_ = res.WriteText(&txt)
	testutil.Golden(t, filepath.Join("testdata", "golden", "admission-admitted.txt"), txt.Bytes())
}
