package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/sealtest"
)

// entryOf returns the listing entry of id.
func entryOf(t *testing.T, list map[string]any, id string) map[string]any {
	t.Helper()
	for _, x := range list["workflows"].([]any) {
		if w := x.(map[string]any); w["id"] == id {
			return w
		}
	}
	t.Fatalf("no entry %s in %v", id, list)
	return nil
}

func idOf(t *testing.T, s *session, folder string) string {
	t.Helper()
	for _, w := range s.srv.catalog.cat.workflows {
		if filepath.Base(w.dir) == folder {
			return w.id
		}
	}
	t.Fatalf("no workflow in %s", folder)
	return ""
}

func paramOf(t *testing.T, entry map[string]any, name string) map[string]any {
	t.Helper()
	for _, x := range entry["parameters"].([]any) {
		if p := x.(map[string]any); p["name"] == name {
			return p
		}
	}
	t.Fatalf("no parameter %s in %v", name, entry)
	return nil
}

// TestCardShown: a card's text appears in list_workflows, get_workflow and
// the run tool's description; its name works wherever the id does; its
// input constraints join the schema and the listing.
func TestCardShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeCard(t, e.typedBundle("typed", "shown"), goldenCard)
	e.demo("plain", testBundle{salt: "plain"})
	o := e.opts()
	o.AllowRun = true
	s := start(t, o)
	id := idOf(t, s, "typed")
	w := entryOf(t, s.call("list_workflows", map[string]any{}), id)
	if w["label"] != "enter_referral" || w["name"] != "enter_referral" || w["description"] != "Create an outgoing referral for an existing patient." ||
		w["done_means"] != "The referral appears on the patient's chart." {
		t.Fatalf("entry %v", w)
	}
	got, _ := json.Marshal(paramOf(t, w, "patient"))
	if string(got) != `{"description":"Clinic record number.","name":"patient","pattern":"^[0-9]{6,10}$","required":true,"type":"string"}` {
		t.Errorf("patient %s", got)
	}
	got, _ = json.Marshal(paramOf(t, w, "dose_mg"))
	if string(got) != `{"maximum":25,"minimum":0,"name":"dose_mg","required":true,"type":"number"}` {
		t.Errorf("dose_mg %s", got)
	}
	if p := paramOf(t, w, "priority"); !slices.Equal(p["enum"].([]any), []any{"routine"}) {
		t.Errorf("priority %v", p)
	}
	// The plain workflow has no card text.
	plain := entryOf(t, s.call("list_workflows", map[string]any{}), idOf(t, s, "plain"))
	for _, k := range []string{"label", "description", "name", "done_means"} {
		if _, has := plain[k]; has {
			t.Errorf("plain workflow has %s: %v", k, plain)
		}
	}
	// get_workflow by card name is the same workflow.
	byName := s.call("get_workflow", map[string]any{"workflow": "enter_referral"})
	if byName["id"] != id || byName["name"] != "enter_referral" {
		t.Fatalf("get_workflow by name: %v", byName)
	}
	if r := s.call("get_workflow", map[string]any{"workflow": "enter_referral_x"}); errorCode(r) != "unknown_workflow" {
		t.Fatalf("unknown name: %v", r)
	}
	tool := s.tools["run_"+id]
	if tool == nil || !strings.HasPrefix(tool.Description, "enter_referral: Create an outgoing referral for an existing patient. Done means: The referral appears on the patient's chart. Executes") {
		t.Fatalf("run tool description: %v", tool)
	}
	if d := s.tools["run_"+idOf(t, s, "plain")].Description; !strings.HasPrefix(d, "Executes") {
		t.Errorf("plain run tool description: %q", d)
	}
}

// TestCardConstraintsRefuseBeforeFlow: each card constraint refuses a bad
// value with its problem code before Flow starts, never repeating it; a
// good value runs.
func TestCardConstraintsRefuseBeforeFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeCard(t, e.typedBundle("typed", "refuse"), goldenCard)
	o := e.opts()
	o.AllowRun = true
	o.ToolMode = "catalog"
	s := start(t, o)
	alias := bundle.WireName("Größe")
	good := map[string]any{"note": "2026-10-08T09:30:00Z", "scenario": "report=legacy-success", "visit_date": "2026-07-18",
		"dose_mg": json.Number("2.5e1"), "priority": "routine", "patient": "1234567", alias: "170"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	for name, c := range map[string]struct {
		params map[string]any
		want   string
	}{
		"pattern":       {with("patient", canary), "pattern"},
		"not allowed":   {with("priority", "stat"), "not_allowed"},
		"too short":     {with(alias, ""), "too_short"},
		"too long":      {with(alias, "1700"), "too_long"},
		"below":         {with("dose_mg", json.Number("-0.1")), "below_minimum"},
		"above":         {with("dose_mg", json.Number("25.000001")), "above_maximum"},
		"not date-time": {with("note", "2026-10-08"), "not_a_date"},
	} {
		r := s.call("run_workflow", map[string]any{"workflow_id": "enter_referral", "params": c.params})
		probs, _ := r["invalid_inputs"].([]any)
		if errorCode(r) != "invalid_arguments" || len(probs) != 1 || probs[0].(map[string]any)["problem"] != c.want {
			t.Errorf("%s: %v", name, r)
		}
	}
	e.wantRuns(0)
	assertNoCanary(t, "wire", s.out())
	if r := s.call("run_workflow", map[string]any{"workflow_id": "enter_referral", "params": good}); r["status"] != "success" {
		t.Fatalf("good call: %v", r)
	}
	if p := e.invocations()[0].Params; p["dose_mg"] != "2.5e1" || p["Größe"] != "170" {
		t.Errorf("parameters file %v", p)
	}
}

// TestCardLabelsWin: --labels overrides the card's name for display (label)
// and its purpose (description), field by field; the card's name still
// resolves, and its constraints still apply.
func TestCardLabelsWin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeCard(t, e.typedBundle("typed", "labels"), goldenCard)
	s0 := start(t, e.opts())
	id := idOf(t, s0, "typed")
	path := filepath.Join(e.root, "labels.json")
	doc := `{"mediaType":"` + "application/vnd.openadapt.agent.labels+json;version=1" + `","workflows":{"` + id + `":{"label":"Referral (operator)"}}}`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	o := e.opts()
	o.Labels = path
	o.AllowRun = true
	s := start(t, o)
	w := entryOf(t, s.call("list_workflows", map[string]any{}), id)
	if w["label"] != "Referral (operator)" || w["name"] != "enter_referral" || w["description"] != "Create an outgoing referral for an existing patient." {
		t.Fatalf("entry %v", w)
	}
	if d := s.tools["run_"+id].Description; !strings.HasPrefix(d, "Referral (operator): Create an outgoing") {
		t.Errorf("description %q", d)
	}
	if r := s.call("get_workflow", map[string]any{"workflow": "enter_referral"}); r["id"] != id {
		t.Errorf("name lookup: %v", r)
	}
}

// TestCardIgnored: an invalid card is ignored with one stderr warning that
// names the workflow id and the rule, never the card's text; the server
// starts and the workflow is listed without card text.
func TestCardIgnored(t *testing.T) {
	t.Parallel()
	for name, card := range map[string]string{
		"identifier":    `{"name":"ok_name","purpose":"Call ` + canary + ` at 555-123-4567"}`,
		"unknown key":   `{"name":"ok_name","` + canary + `":1}`,
		"unknown input": `{"inputs":{"` + canary + `":{}}}`,
		"bad pattern":   `{"inputs":{"patient":{"pattern":"\\s` + canary + `"}}}`,
		"not json":      canary,
		"too large":     `{"purpose":"` + strings.Repeat("a", 17<<10) + `"}`,
		// skill emit --card-starter's starter, not filled in yet.
		"starter": string(cards.Starter([]string{"note", "Größe"})),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			writeCard(t, e.typedBundle("typed", "ignored"), card)
			s := start(t, e.opts())
			id := idOf(t, s, "typed")
			warn := s.stderr.String()
			if !strings.Contains(warn, "serve: warning: workflow "+id+": its openadapt-card.json is ignored: ") {
				t.Fatalf("stderr %q", warn)
			}
			assertNoCanary(t, "stderr", warn)
			w := entryOf(t, s.call("list_workflows", map[string]any{}), id)
			if _, has := w["name"]; has || w["available"] != true {
				t.Errorf("entry %v", w)
			}
			assertNoCanary(t, "wire", s.out())
		})
	}
	// A linked card is never followed.
	e := newEnv(t)
	dir := e.typedBundle("typed", "linked")
	other := filepath.Join(e.root, "card.json")
	os.WriteFile(other, []byte(`{"name":"linked_card"}`), 0o644)
	if err := os.Symlink(other, filepath.Join(dir, cards.FileName)); err != nil {
		t.Fatal(err)
	}
	s := start(t, e.opts())
	if !strings.Contains(s.stderr.String(), "symbolic link") || s.srv.catalog.cat.lookup("linked_card") != nil {
		t.Errorf("linked card: %q", s.stderr.String())
	}
}

// TestCardNameCollision: a name two bundles' cards use is dropped from both,
// with one warning naming both ids; each keeps the rest of its card.
func TestCardNameCollision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeCard(t, e.demo("a", testBundle{salt: "a"}), `{"name":"same_name","purpose":"First."}`)
	writeCard(t, e.demo("b", testBundle{salt: "b"}), `{"name":"same_name","purpose":"Second."}`)
	writeCard(t, e.demo("c", testBundle{salt: "c"}), `{"name":"other_name"}`)
	s := start(t, e.opts())
	a, b := idOf(t, s, "a"), idOf(t, s, "b")
	if !strings.Contains(s.stderr.String(), "serve: warning: workflows "+a+", "+b+" have cards with the same name") {
		t.Fatalf("stderr %q", s.stderr.String())
	}
	list := s.call("list_workflows", map[string]any{})
	if w := entryOf(t, list, a); w["name"] != nil || w["label"] != nil || w["description"] != "First." {
		t.Errorf("a %v", w)
	}
	if r := s.call("get_workflow", map[string]any{"workflow": "same_name"}); errorCode(r) != "unknown_workflow" {
		t.Errorf("dropped name resolves: %v", r)
	}
	if r := s.call("get_workflow", map[string]any{"workflow": "other_name"}); r["id"] != idOf(t, s, "c") {
		t.Errorf("other_name: %v", r)
	}
}

// TestCardSearch: search_workflows matches card text.
func TestCardSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeCard(t, e.typedBundle("typed", "search"), goldenCard)
	e.demo("plain", testBundle{salt: "plain"})
	o := e.opts()
	o.ToolMode = "catalog"
	s := start(t, o)
	for q, want := range map[string]float64{"referral": 1, "ENTER_REFERRAL": 1, "patient's chart": 1, "clinic record": 1, "nothing-like-it": 0} {
		if r := s.call("search_workflows", map[string]any{"query": q}); r["total_matches"] != want {
			t.Errorf("%q: %v", q, r["total_matches"])
		}
	}
}

// TestCardCachedAndSealed: a warm start (digest cache hit) reads the card
// again and lists exactly what the cold start did, including an enum that
// narrows Flow's own choices (checked through a metadata load); a sealed
// bundle's plaintext card counts too.
func TestCardCachedAndSealed(t *testing.T) {
	e := newEnv(t)
	setRacyWindow(t, 0)
	writeCard(t, e.typedBundle("typed", "cached"), `{"name":"typed_flow","inputs":{"priority":{"enum":["stat"]}}}`)
	const pass = "test-passphrase"
	sealed := filepath.Join(e.bundles, "sealed")
	sealtest.Seal(t, filepath.Join("..", "testdata", "flow", "plain", "mockmed-triage-v3"), sealed, pass)
	writeCard(t, sealed, `{"name":"sealed_flow","purpose":"A sealed workflow.","inputs":{"note":{"maxLength":40}}}`)
	testOnlyKeyCheckN = sealtest.N
	t.Cleanup(func() { testOnlyKeyCheckN = 0 })
	o := e.opts()
	o.Environ = append(o.Environ, bundle.KeyEnv+"="+pass)
	loads := countLoads(t)
	var lists []string
	for range 2 {
		s := start(t, o)
		r := s.call("list_workflows", map[string]any{})
		b, _ := json.Marshal(r)
		lists = append(lists, string(b))
		if s.srv.catalog.cat.lookup("typed_flow") == nil || s.srv.catalog.cat.lookup("sealed_flow") == nil {
			t.Fatalf("names: %s", s.stderr.String())
		}
	}
	if loads.Load() != 2 {
		t.Errorf("%d full verifications, want 2 (the warm start uses the cache)", loads.Load())
	}
	if lists[0] != lists[1] {
		t.Errorf("warm listing differs:\n%s\n%s", lists[0], lists[1])
	}
	// A card that widens Flow's choices is refused, warm or cold.
	writeCard(t, filepath.Join(e.bundles, "typed"), `{"name":"typed_flow","inputs":{"priority":{"enum":["later"]}}}`)
	for range 2 {
		s := start(t, o)
		if s.srv.catalog.cat.lookup("typed_flow") != nil || !strings.Contains(s.stderr.String(), "outside the workflow's own choices") {
			t.Fatalf("widening enum: %q", s.stderr.String())
		}
	}
}

// TestInputProblemCodes: every problem a card gives is one of the wire's
// codes.
func TestInputProblemCodes(t *testing.T) {
	t.Parallel()
	for _, c := range []string{problemMissing, problemUnknownInput, problemWrongType, cards.ProblemNotADate, cards.ProblemNotAllowed,
		cards.ProblemTooShort, cards.ProblemTooLong, cards.ProblemPattern, cards.ProblemBelowMinimum, cards.ProblemAboveMaximum} {
		if !slices.Contains(inputProblems, c) {
			t.Errorf("%s is not a wire code", c)
		}
	}
}
