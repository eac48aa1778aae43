package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/sealtest"
)

// TestBundleVerifyJSONMatchesManifest runs the built CLI, `bundle verify
// --json --protected`, over the bundle vectors (each its own operand) and
// compares each entry with the MANIFEST's expectations: with the passphrase
// in the child's environment, and without it for the sealed vectors
// (workflow_id_without_key, missing_key). --protected is the exact
// canonical schema that the vectors pin (docs/bundle.md, Parameters); the
// default view is the PHI-safe one (TestBundleViewsHidePlantedText).
//
// bundle's TestVectors owns "every vector, sealed ones included, loads as
// its MANIFEST says"; this is the CLI's end-to-end check of the same fields.
// With the key it runs every plaintext vector and, for the sealed shape, a
// cheaply sealed copy of plain/mockmed-triage-v3 (internal/testing/sealtest):
// Flow's sealed vectors cost one scrypt (N=2^15) per sealed file, ≈ 1 s of
// CPU each under -race, 13 in all, and the CLI code after decryption is the
// same for any container. The keyless run covers Flow's three sealed vectors
// as Flow sealed them; their decrypt_failed lines with the key are in
// bundle_verify_failures.txtar and bundle_verify_json.txtar.
func TestBundleVerifyJSONMatchesManifest(t *testing.T) {
	t.Parallel()
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
		if e.WorkflowIDWithoutKey != nil {
			mk := "missing_key"
			wantNoKey = append(wantNoKey, entry{Path: p, Integrity: "failed", ErrorKind: &mk, WorkflowID: *e.WorkflowIDWithoutKey, BundleVersion: e.BundleVersion, Encrypted: true})
		}
		if e.Encrypted {
			continue
		}
		args = append(args, p)
		w := entry{p, e.Integrity, e.ErrorKind, e.WorkflowID, e.ContentDigest, e.BundleVersion, e.Encrypted, e.SchemaVersion, e.StepCount, e.ActionStepCount, e.Params}
		if e.Integrity == "legacy_unverified" {
			// The MANIFEST gives no params view for legacy bundles; the
			// canonical schema of its raw JSON is a single optional "note".
			raw := json.RawMessage(`[{"name":"note","type":"string","required":false,"secret":false,"choices":[]}]`)
			w.Parameters = &raw
		}
		want = append(want, w)
		if v.Path == "plain/mockmed-triage-v3" {
			// The sealed copy: the same workflow, so the same counts and
			// parameters; its id, digest and keyless bundle_version are
			// bundle.Load's (its salts are random).
			p := filepath.Join(t.TempDir(), "sealed-copy")
			sealtest.Seal(t, filepath.Join(dir, v.Path), p, m.Passphrase)
			b, _ := bundle.Load(p, bundle.WithKey(m.Passphrase))
			if b.Integrity != bundle.Verified || !b.Encrypted || b.BundleVersion == "" {
				t.Fatalf("the sealed copy: %s encrypted %v version %q (%v)", b.Integrity, b.Encrypted, b.BundleVersion, b.Err)
			}
			w.Path, w.Encrypted, w.WorkflowID, w.ContentDigest, w.BundleVersion = p, true, b.ID, &b.ContentDigest, &b.BundleVersion
			args = append(args, p)
			want = append(want, w)
		}
	}
	if len(want) != 14 || len(wantNoKey) != 3 {
		t.Fatalf("found %d entries to check with the key and %d sealed vectors, want 13 plaintext vectors + the sealed copy, and 3", len(want), len(wantNoKey))
	}
	home := t.TempDir()
	run := func(key string, args []string) (doc, int, string) {
		c := exec.Command("openadapt-agent", append([]string{"bundle", "verify", "--json", "--protected"}, args...)...)
		c.Env = childEnv("HOME=" + home)
		if key != "" {
			c.Env = append(c.Env, "OPENADAPT_BUNDLE_KEY="+key)
		}
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		code := 0
		if err := c.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
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
	// The text view of a verified sealed bundle: the same line as a
	// plaintext one (bundle_verify_vectors.txtar), from the sealed copy.
	var sealed entry
	for _, e := range want {
		if e.Encrypted {
			sealed = e
		}
	}
	c := exec.Command("openadapt-agent", "bundle", "verify", sealed.Path)
	c.Env = append(childEnv("HOME="+home), "OPENADAPT_BUNDLE_KEY="+m.Passphrase)
	out, err := c.Output()
	if wantLine := "verified " + sealed.WorkflowID + " sha256:" + *sealed.ContentDigest + " " + sealed.Path + "\n"; err != nil || !strings.HasSuffix(string(out), wantLine) {
		t.Errorf("text view of the sealed copy: %v\n%s\nwant the line %q", err, out, wantLine)
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
