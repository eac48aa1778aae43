package serve

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unicodeArgs are valid arguments for the unicode-params vector, by wire
// name (the names outside serve's rule under their alias).
func unicodeArgs() map[string]any {
	return map[string]any{
		"note": "n", "patient_name": "pn", "emoji_59936a": "e", "line_sep_353957": "l",
		"visit_date": "2026-07-18", "priority": "urgent", "dose_mg": "2.5", "patient": "p-1",
	}
}

// TestAliasedParametersRunEndToEnd: a workflow whose parameter names are
// not plain ASCII is available, its run tool takes the aliases (and only
// them), and the fake Flow's parameters file holds Flow's own names
// (docs/bundle.md, Parameter aliases). Flow's names never reach the wire.
func TestAliasedParametersRunEndToEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	copyVector(t, "plain/unicode-params", filepath.Join(e.bundles, "u"))
	o := e.opts()
	o.AllowRun = true
	o.Environ = append(o.Environ, "OPENADAPT_FAKE_FLOW_REPORT=legacy-success")
	s := start(t, o)
	tool := s.runTool()
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	raw, _ := json.Marshal(s.tools[tool].InputSchema)
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	var props []string
	for k := range schema.Properties {
		props = append(props, k)
	}
	slices.Sort(props)
	want := []string{"dose_mg", "emoji_59936a", "idempotency_key", "line_sep_353957", "note", "patient", "patient_name", "priority", "visit_date"}
	if !slices.Equal(props, want) || len(schema.Required) != 8 {
		t.Fatalf("schema properties %v required %v", props, schema.Required)
	}
	list := s.call("list_workflows", map[string]any{})
	w := list["workflows"].([]any)[0].(map[string]any)
	if w["available"] != true {
		t.Fatalf("not available: %v", w)
	}
	// Flow's own names are refused: they are not the tool's inputs.
	args := unicodeArgs()
	args["emoji_🩺"] = args["emoji_59936a"]
	delete(args, "emoji_59936a")
	if r := s.call(tool, args); errorCode(r) == "" {
		t.Fatalf("Flow's name accepted: %v", r)
	}
	e.wantRuns(0)
	r := s.call(tool, unicodeArgs())
	if r["status"] != "success" {
		t.Fatalf("run: %v", r)
	}
	inv := e.invocations()
	if len(inv) != 1 {
		t.Fatalf("%d runs", len(inv))
	}
	wantParams := map[string]any{
		"note": "n", "patient_name": "pn", "emoji_🩺": "e", "line\u2028sep": "l",
		"visit_date": "2026-07-18", "priority": "urgent", "dose_mg": "2.5", "patient": "p-1",
	}
	got, _ := json.Marshal(inv[0].Params)
	exp, _ := json.Marshal(wantParams)
	if string(got) != string(exp) {
		t.Errorf("parameters file %s, want %s", got, exp)
	}
	for _, flowName := range []string{"emoji_🩺", "line\u2028sep", `emoji_\ud83e\ude7a`, `line\u2028sep`} {
		if strings.Contains(s.out(), flowName) {
			t.Errorf("Flow's name %q reached the wire", flowName)
		}
	}
}
