package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// plantedBundle writes a verifying schema-v3 bundle (no schema-v2 default
// removals apply)
// whose free text carries planted secrets in every place the default views
// used to print: a parameter type, an enum choice, a name outside serve's
// rule (shown only as its alias, which every MCP client sees too), a
// reserved name, a secret_params entry, the compiler version and the
// certification status.
func plantedBundle(t *testing.T) (dir string, planted []string) {
	t.Helper()
	planted = []string{"PLANTED-TYPE-3c9e", "PLANTED-CHOICE-3c9e", "PLANTED NAME 3c9e", "PLANTED_SECRET_3c9e", "PLANTED-VERSION-3c9e", "PLANTED-STATUS-3c9e"}
	w := map[string]any{
		"schema_version": 3,
		"name":           "synthetic",
		"params":         map[string]any{"note": "x", planted[2]: "y", "url": "z"},
		"param_specs": map[string]any{
			"kind":     map[string]any{"name": "kind", "type": planted[0], "required": true},
			"priority": map[string]any{"name": "priority", "type": "enum", "required": false, "choices": []any{"routine", planted[1]}},
		},
		"secret_params": []any{planted[3]},
		"steps":         []any{},
	}
	dir = filepath.Join(t.TempDir(), "b")
	writeTestBundle(t, dir, w, nil, map[string]any{"compiler_version": planted[4], "certified": true, "certification_status": planted[5]})
	return dir, planted
}

// writeTestBundle writes a plaintext bundle at dir whose embedded manifest
// lists fileHashes (path → hex; the files themselves are the caller's) and
// carries the content digest computed like Flow's. Use schema_version 3 in
// w, so that no schema-v2 default removal applies.
func writeTestBundle(t testing.TB, dir string, w map[string]any, fileHashes map[string]string, provenance map[string]any) {
	t.Helper()
	fh := map[string]any{}
	for k, v := range fileHashes {
		fh[k] = v
	}
	raw, _ := json.Marshal(map[string]any{"files": fh, "workflow": w})
	canon, err := bundle.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	w["manifest"] = map[string]any{"schema_version": 1, "content_digest": hex.EncodeToString(sum[:]), "file_hashes": fh,
		"provenance": provenance, "encrypted": false}
	data, _ := json.Marshal(w)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workflow.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBundleViewsHidePlantedText: the default `bundle inspect` (text and
// --json) and `bundle verify` (text and --json) views print none of the
// planted text (docs/bundle.md, Parameters) and count what they hide; --protected
// prints all of it, so the check can see a leak.
func TestBundleViewsHidePlantedText(t *testing.T) {
	dir, planted := plantedBundle(t)
	run := func(args ...string) (string, string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(context.Background(), args, nil, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	// The name outside serve's rule is shown as its alias: the same
	// letters, lower-cased, so only its exact text is checked.
	const alias = "planted_name_3c9e_5c081b"
	if got := bundle.ParamAlias(planted[2]); got != alias {
		t.Fatalf("alias %q, want %q", got, alias)
	}
	for _, args := range [][]string{
		{"bundle", "inspect", dir},
		{"bundle", "inspect", "--json", dir},
		{"bundle", "verify", dir},
		{"bundle", "verify", "--json", dir},
	} {
		out, errs := run(args...)
		if strings.Contains(out+errs, planted[2]) {
			t.Errorf("%v prints the aliased name %q:\n%s%s", args, planted[2], out, errs)
		}
		for i, p := range planted {
			if i == 2 {
				continue
			}
			for _, field := range strings.Fields(p) {
				if strings.Contains(out+errs, field) {
					t.Errorf("%v prints planted %q:\n%s%s", args, field, out, errs)
				}
			}
		}
		if strings.Contains(out, "url") {
			t.Errorf("%v prints the reserved name url:\n%s", args, out)
		}
	}

	out, _ := run("bundle", "verify", "--json", dir)
	var doc struct {
		Bundles []struct {
			Parameters []bundle.SafeParam   `json:"parameters"`
			Hidden     *bundle.HiddenParams `json:"hidden_parameters"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Bundles) != 1 {
		t.Fatalf("verify --json: %v\n%s", err, out)
	}
	want := []bundle.SafeParam{
		{Name: "kind", Type: "other", Required: true},
		{Name: "note", Type: "string", Required: false},
		{Name: alias, Type: "string", Required: false, Aliased: true},
		{Name: "priority", Type: "enum", Required: false, ChoiceCount: 2},
	}
	got := doc.Bundles[0]
	if !equalJSON(got.Parameters, want) || got.Hidden == nil || *got.Hidden != (bundle.HiddenParams{Secret: 1, RefusedName: 1}) {
		t.Errorf("safe view: parameters %+v hidden %+v; want %+v and 1 secret, 1 refused", got.Parameters, got.Hidden, want)
	}

	out, _ = run("bundle", "inspect", "--json", dir)
	for _, s := range []string{`"secret_param_count": 1`, `"legacy_params": [` + "\n" + `        "` + alias + `",` + "\n" + `        "note"` + "\n      ]", `"compiler_version": "other"`, `"certification_status": "other"`} {
		if !strings.Contains(out, s) {
			t.Errorf("inspect --json lacks %s:\n%s", s, out)
		}
	}

	// --protected shows every planted value, and warns.
	for _, args := range [][]string{{"bundle", "inspect", "--protected", dir}, {"bundle", "inspect", "--protected", "--json", dir}, {"bundle", "verify", "--protected", "--json", dir}} {
		out, errs := run(args...)
		for _, p := range planted[:4] {
			if !strings.Contains(out, p) {
				t.Errorf("%v lacks %q:\n%s", args, p, out)
			}
		}
		if !strings.Contains(errs, "warning: --protected prints protected data") {
			t.Errorf("%v: no warning on stderr: %q", args, errs)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
