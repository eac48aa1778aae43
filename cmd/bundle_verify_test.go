package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBundleVerifyJSONMatchesManifest runs `bundle verify --json --protected`
// over every bundle vector (each its own operand) and compares each entry
// with the MANIFEST's expectations: with the passphrase, and without it for
// sealed vectors (workflow_id_without_key, missing_key). --protected is the
// exact flow-bundle.md §2 view that the vectors pin (round2-decisions 5);
// the default view is the PHI-safe one (TestBundleViewsHidePlantedText).
func TestBundleVerifyJSONMatchesManifest(t *testing.T) {
	dir := filepath.Join("..", "testdata", "flow")
	data, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Passphrase string `json:"passphrase"`
		Vectors    []struct {
			Path     string `json:"path"`
			Kind     string `json:"kind"`
			Expected struct {
				Integrity            string           `json:"integrity"`
				ErrorKind            *string          `json:"error_kind"`
				ContentDigest        *string          `json:"content_digest"`
				BundleVersion        *string          `json:"bundle_version"`
				WorkflowID           string           `json:"workflow_id"`
				WorkflowIDWithoutKey *string          `json:"workflow_id_without_key"`
				Encrypted            bool             `json:"encrypted"`
				SchemaVersion        *int             `json:"schema_version"`
				StepCount            *int             `json:"step_count"`
				ActionStepCount      *int             `json:"action_step_count"`
				Params               *json.RawMessage `json:"params"`
			} `json:"expected"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Path            string           `json:"path"`
		Integrity       string           `json:"integrity"`
		ErrorKind       *string          `json:"error_kind"`
		WorkflowID      string           `json:"workflow_id"`
		ContentDigest   *string          `json:"content_digest"`
		BundleVersion   *string          `json:"bundle_version"`
		Encrypted       bool             `json:"encrypted"`
		SchemaVersion   *int             `json:"schema_version"`
		StepCount       *int             `json:"step_count"`
		ActionStepCount *int             `json:"action_step_count"`
		Parameters      *json.RawMessage `json:"parameters"`
	}
	type doc struct {
		MediaType string  `json:"mediaType"`
		Bundles   []entry `json:"bundles"`
	}
	var args []string
	var want, wantNoKey []entry
	for _, v := range m.Vectors {
		if v.Kind != "bundle" {
			continue
		}
		e := v.Expected
		p := filepath.Join(dir, v.Path)
		args = append(args, p)
		w := entry{p, e.Integrity, e.ErrorKind, e.WorkflowID, e.ContentDigest, e.BundleVersion, e.Encrypted, e.SchemaVersion, e.StepCount, e.ActionStepCount, e.Params}
		if e.Integrity == "legacy_unverified" {
			// The MANIFEST gives no params view for legacy bundles; the
			// canonical schema of its raw JSON is a single optional "note".
			raw := json.RawMessage(`[{"name":"note","type":"string","required":false,"secret":false,"choices":[]}]`)
			w.Parameters = &raw
		}
		want = append(want, w)
		if e.WorkflowIDWithoutKey != nil {
			mk := "missing_key"
			wantNoKey = append(wantNoKey, entry{Path: p, Integrity: "failed", ErrorKind: &mk, WorkflowID: *e.WorkflowIDWithoutKey, BundleVersion: e.BundleVersion, Encrypted: true})
		}
	}
	if len(want) != 16 {
		t.Fatalf("found %d bundle vectors, want 16", len(want))
	}
	run := func(key string, args []string) (doc, int, string) {
		t.Setenv("OPENADAPT_BUNDLE_KEY", key)
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"bundle", "verify", "--json", "--protected"}, args...), nil, &out, &errb)
		var d doc
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("stdout is not one JSON document: %v\n%s", err, out.String())
		}
		return d, code, errb.String()
	}
	d, code, stderr := run(m.Passphrase, args)
	if code != 1 || !strings.HasPrefix(stderr, "openadapt-agent: warning: --protected prints protected data") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 1 and the --protected warning only", code, stderr)
	}
	if d.MediaType != "application/vnd.openadapt-agent.bundle-verification+json;version=1" {
		t.Errorf("mediaType %q", d.MediaType)
	}
	norm := func(es []entry) []entry {
		for i := range es {
			if es[i].Parameters != nil {
				var v any
				json.Unmarshal(*es[i].Parameters, &v)
				b, _ := json.Marshal(v)
				r := json.RawMessage(b)
				es[i].Parameters = &r
			}
		}
		return es
	}
	if diff := cmp.Diff(norm(want), norm(d.Bundles)); diff != "" {
		t.Errorf("with key (-want +got):\n%s", diff)
	}
	var sealedArgs []string
	for _, e := range wantNoKey {
		sealedArgs = append(sealedArgs, e.Path)
	}
	d, code, _ = run("", sealedArgs)
	if code != 1 {
		t.Errorf("without key: exit %d", code)
	}
	if diff := cmp.Diff(wantNoKey, d.Bundles); diff != "" {
		t.Errorf("without key (-want +got):\n%s", diff)
	}
}
