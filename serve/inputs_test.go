package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
)

// unicodeArgs are valid arguments for the unicode-params vector, by wire
// name (the names outside serve's rule under their alias).
func unicodeArgs() map[string]any {
	return map[string]any{
		"note": "n", "patient_name": "pn", "emoji_59936a": "e", "line_sep_353957": "l",
		"visit_date": "2026-07-18", "priority": "urgent", "dose_mg": json.Number("2.50"), "patient": "p-1",
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
		// A number is passed as the caller's own token, as text.
		"visit_date": "2026-07-18", "priority": "urgent", "dose_mg": "2.50", "patient": "p-1",
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

// TestCheckInputs: each problem code, one problem per input in wire-name
// order after a single unknown_input, and the values for the parameters
// file keyed by Flow's names.
func TestCheckInputs(t *testing.T) {
	t.Parallel()
	ps := paramsOf([]string{"when", "dose", "note", "Größe"}, []string{"date", "number", "string", "enum"})
	ok := map[string]any{"when": "2026-01-31", "dose": json.Number("-1.5e3"), "note": "", ps[3].wire: "x"}
	vals, probs := checkInputs(ps, ok, true)
	if probs != nil || vals["dose"] != "-1.5e3" || vals["Größe"] != "x" || vals["when"] != "2026-01-31" || vals["note"] != "" || len(vals) != 4 {
		t.Fatalf("valid: %v %v", vals, probs)
	}
	bad := map[string]any{"when": "2026-02-30", "dose": "5", "note": json.Number("5"), canary: canary, "x-" + canary: 1}
	vals, probs = checkInputs(ps, bad, true)
	want := []inputProblem{{Problem: "unknown_input"}, {Input: "dose", Problem: "wrong_type"}, {Input: ps[3].wire, Problem: "missing"},
		{Input: "note", Problem: "wrong_type"}, {Input: "when", Problem: "not_a_date"}}
	if vals != nil || !slices.Equal(probs, want) {
		t.Fatalf("problems %v, want %v", probs, want)
	}
	// Without requireAll nothing is missing; null, bool, object and array
	// are the wrong type for every input.
	for _, v := range []any{nil, true, map[string]any{}, []any{}} {
		_, probs = checkInputs(ps, map[string]any{"note": v, "dose": v, "when": v}, false)
		want := []inputProblem{{Input: "dose", Problem: "wrong_type"}, {Input: "note", Problem: "wrong_type"}, {Input: "when", Problem: "wrong_type"}}
		if !slices.Equal(probs, want) {
			t.Fatalf("%v: %v", v, probs)
		}
	}
	if vals, probs := checkInputs(ps, map[string]any{}, false); probs != nil || len(vals) != 0 {
		t.Fatalf("nothing given: %v %v", vals, probs)
	}
}

// typedBundle writes a bundle whose parameters have each of Flow's types,
// plus a name outside serve's rule.
func (e *env) typedBundle(dir, salt string) string {
	return e.demo(dir, testBundle{salt: salt, params: map[string]string{"note": "n", "scenario": "s"}, extra: map[string]any{
		"param_specs": map[string]any{
			"visit_date": map[string]any{"name": "visit_date", "type": "date", "required": false},
			"dose_mg":    map[string]any{"name": "dose_mg", "type": "number", "required": false},
			"priority":   map[string]any{"name": "priority", "type": "enum", "required": true, "choices": []any{"routine", "stat"}},
			"patient":    map[string]any{"name": "patient", "type": "entity_ref", "required": true},
			"Größe":      map[string]any{"name": "Größe", "type": "string", "required": true},
		},
	}})
}

// TestTypedInputs: the run tool's schema carries Flow's types (a date is
// a string with format date, a number a number; enum and entity_ref are
// strings and Flow's choices never appear), the listing says the same, and
// a bad value is refused before Flow starts with invalid_inputs that never
// repeat a value or an undeclared key.
func TestTypedInputs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.typedBundle("typed", "typed")
	o := e.opts()
	o.AllowRun = true
	s := start(t, o)
	tool := s.runTool()
	// The wire bytes of tools/list (the client re-orders keys).
	raw := []byte(s.out())
	for _, want := range []string{
		`"visit_date":{"type":"string","format":"date","description":`,
		`"dose_mg":{"type":"number","description":`,
		`"priority":{"type":"string","description":`,
		`"patient":{"type":"string","description":`,
		`"gro_e_`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("input schema lacks %s: %s", want, raw)
		}
	}
	if strings.Contains(string(raw), "routine") {
		t.Errorf("Flow's choices reached the schema: %s", raw)
	}
	list := s.call("list_workflows", map[string]any{})
	got, _ := json.Marshal(list["workflows"].([]any)[0].(map[string]any)["parameters"])
	for _, want := range []string{
		`{"name":"dose_mg","required":true,"type":"number"}`,
		`{"format":"date","name":"visit_date","required":true,"type":"string"}`,
		`{"name":"priority","required":true,"type":"string"}`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("listing lacks %s: %s", want, got)
		}
	}
	alias := ""
	for _, p := range s.srv.catalog.cat.workflows[0].params {
		if p.flow == "Größe" {
			alias = p.wire
		}
	}
	good := map[string]any{"note": "n", "scenario": "report=legacy-success", "visit_date": "2026-07-18", "dose_mg": json.Number("12"),
		"priority": "stat", "patient": "p", alias: "g"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for name, c := range map[string]struct {
		args map[string]any
		want string
	}{
		"not a date":    {with("visit_date", canary+"-2026-02-30"), `[{"input":"visit_date","problem":"not_a_date"}]`},
		"leap day":      {with("visit_date", "2026-02-29"), `[{"input":"visit_date","problem":"not_a_date"}]`},
		"number string": {with("dose_mg", "12"), `[{"input":"dose_mg","problem":"wrong_type"}]`},
		"string number": {with("note", json.Number("1")), `[{"input":"note","problem":"wrong_type"}]`},
		"missing alias": {with(alias, nil), `[{"input":"` + alias + `","problem":"missing"}]`},
		"unknown":       {with(canary, canary), `[{"problem":"unknown_input"}]`},
	} {
		r := s.call(tool, c.args)
		got, _ := json.Marshal(r["invalid_inputs"])
		if errorCode(r) != "invalid_arguments" || string(got) != c.want {
			t.Errorf("%s: %v", name, r)
		}
	}
	e.wantRuns(0)
	assertNoCanary(t, "wire", s.out())
	// A good call runs, with the number as the caller's token.
	if r := s.call(tool, good); r["status"] != "success" {
		t.Fatalf("good call: %v", r)
	}
	if p := e.invocations()[0].Params; p["dose_mg"] != "12" || p["Größe"] != "g" || p["visit_date"] != "2026-07-18" {
		t.Errorf("parameters file %v", p)
	}
}

// goldenCard is a card for typedBundle with every constraint.
const goldenCard = `{"name":"enter_referral","purpose":"Create an outgoing referral for an existing patient.",
 "done_means":"The referral appears on the patient's chart.",
 "inputs":{"patient":{"description":"Clinic record number.","pattern":"^[0-9]{6,10}$"},
  "priority":{"enum":["routine"]},"dose_mg":{"minimum":0,"maximum":2.5e1},
  "Größe":{"description":"Größe in cm.","minLength":1,"maxLength":3},
  "visit_date":{"description":"Date of the visit."},"note":{"format":"date-time"}}}`

// writeCard writes an openadapt-card.json into the bundle folder dir.
func writeCard(t testing.TB, dir, card string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, cards.FileName), []byte(card), 0o644); err != nil {
		t.Fatal(err)
	}
}
