package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// testBundle describes a generated plaintext bundle.
type testBundle struct {
	name    string
	params  map[string]string // legacy params with recorded values
	intents []string
	extra   map[string]any // extra top-level workflow keys
	noManif bool           // legacy: no manifest
	tamper  bool           // digest mismatch
	salt    string         // makes the content unique
}

// writeBundle writes a schema-v3 plaintext bundle (nothing is omitted)
// with an embedded manifest whose content digest is computed like Flow's.
func writeBundle(t testing.TB, dir string, tb testBundle) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	steps := []any{}
	for i, in := range tb.intents {
		steps = append(steps, map[string]any{"id": "step_00" + string(rune('0'+i)), "intent": in, "action": "click"})
	}
	params := map[string]any{}
	for k, v := range tb.params {
		params[k] = v
	}
	w := map[string]any{
		"schema_version": 3,
		"name":           tb.name,
		"recording_id":   "rec-" + tb.salt,
		"params":         params,
		"steps":          steps,
	}
	for k, v := range tb.extra {
		w[k] = v
	}
	if !tb.noManif {
		raw, _ := json.Marshal(map[string]any{"files": map[string]any{}, "workflow": w})
		canon, err := bundle.CanonicalJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(canon)
		digest := hex.EncodeToString(sum[:])
		if tb.tamper {
			digest = "00" + digest[2:]
		}
		w["manifest"] = map[string]any{"schema_version": 1, "content_digest": digest, "file_hashes": map[string]any{}, "provenance": nil, "encrypted": false}
	}
	data, _ := json.MarshalIndent(w, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "workflow.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGenBundleVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBundle(t, filepath.Join(dir, "a"), testBundle{name: canary, params: map[string]string{"note": canary}, intents: []string{"Open the patient chart", "type " + canary}, salt: "1"})
	b, err := bundle.Load(filepath.Join(dir, "a"))
	if err != nil || !b.Verified() {
		t.Fatalf("%v %+v", err, b)
	}
	t.Logf("%s %v", b.ID, b.DeclaredParams())
}
