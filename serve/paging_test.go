package serve

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// walk pages through a listing tool with args (limit, query...) and
// returns every page, failing on an error or a page past the first that
// does not carry the same total.
func walk(t *testing.T, s *session, tool string, args map[string]any) []map[string]any {
	t.Helper()
	var pages []map[string]any
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	for {
		p := s.call(tool, a)
		if errorCode(p) != "" {
			t.Fatalf("%s page %d: %v", tool, len(pages), p)
		}
		pages = append(pages, p)
		c, ok := p["next_cursor"].(string)
		if !ok {
			return pages
		}
		if len(pages) > 10000 {
			t.Fatal("paging does not end")
		}
		a["cursor"] = c
	}
}

func ids(items []any) []string {
	var out []string
	for _, x := range items {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}

func pagedIDs(pages []map[string]any, key string) []string {
	var out []string
	for _, p := range pages {
		out = append(out, ids(p[key].([]any))...)
	}
	return out
}

// badCursorRefused: the call is invalid_arguments whose recovery says to
// start again without a cursor.
func badCursorRefused(t *testing.T, s *session, tool string, args map[string]any, what string) {
	t.Helper()
	r := s.call(tool, args)
	if errorCode(r) != "invalid_arguments" {
		t.Fatalf("%s: %s accepted: %.300v", tool, what, r)
	}
	if rec := r["error"].(map[string]any)["recovery"].(string); !strings.Contains(rec, "without a cursor") {
		t.Fatalf("%s: %s: recovery %q", tool, what, rec)
	}
}

// recursor re-encodes a workflow cursor with its payload changed by edit.
func recursor(t *testing.T, c string, edit func(map[string]any)) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, _ = json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestListWorkflowsPaging: walking list_workflows page by page returns
// every workflow exactly once, in the order of one big page (discovery
// order); limit is bounded; a cursor the listing did not hand out is
// invalid_arguments with a hint to start again.
func TestListWorkflowsPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 123 {
		e.demo(fmt.Sprintf("w%03d", i), testBundle{name: canary, params: map[string]string{"note": canary}, salt: fmt.Sprint("p", i)})
	}
	e.demo("zz-broken", testBundle{salt: "broken", tamper: true})
	s := start(t, e.opts())

	first := s.call("list_workflows", map[string]any{})
	if first["total_matches"] != 124.0 || len(first["workflows"].([]any)) != defaultPageLimit || first["next_cursor"] == nil {
		t.Fatalf("default page: total %v, %d workflows, next %v", first["total_matches"], len(first["workflows"].([]any)), first["next_cursor"])
	}
	all := s.call("list_workflows", map[string]any{"limit": maxPageLimit})
	want := ids(all["workflows"].([]any))
	if len(want) != 124 || all["next_cursor"] != nil {
		t.Fatalf("one page of %d, next %v", len(want), all["next_cursor"])
	}
	if len(slices.Compact(slices.Sorted(slices.Values(want)))) != 124 {
		t.Fatal("duplicate ids")
	}
	for _, limit := range []int{1, 7, 50, 123, 124} {
		pages := walk(t, s, "list_workflows", map[string]any{"limit": limit})
		if got := pagedIDs(pages, "workflows"); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %d ids, not each once in order", limit, len(got))
		}
		if wantPages := (124 + limit - 1) / limit; len(pages) != wantPages {
			t.Fatalf("limit %d: %d pages", limit, len(pages))
		}
		for i, p := range pages {
			if p["total_matches"] != 124.0 || len(p["workflows"].([]any)) > limit {
				t.Fatalf("limit %d page %d: total %v, %d workflows", limit, i, p["total_matches"], len(p["workflows"].([]any)))
			}
		}
	}

	// limit bounds.
	for _, bad := range []any{0, -1, maxPageLimit + 1, 1.5, "5", nil} {
		if r := s.call("list_workflows", map[string]any{"limit": bad}); errorCode(r) != "invalid_arguments" {
			t.Errorf("limit %v: %.200v", bad, r)
		}
	}

	// The cursor carries an offset and a binding, nothing protected.
	c := first["next_cursor"].(string)
	raw, _ := base64.RawURLEncoding.DecodeString(c)
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil || len(payload) != 2 || payload["offset"] != 50.0 {
		t.Fatalf("cursor %s", raw)
	}
	if strings.Contains(string(raw), canary) || strings.Contains(c, canary) {
		t.Fatal("cursor carries protected data")
	}
	// A page from a cursor is the same page again.
	if a, b := s.call("list_workflows", map[string]any{"cursor": c}), s.call("list_workflows", map[string]any{"cursor": c}); !slices.Equal(ids(a["workflows"].([]any)), ids(b["workflows"].([]any))) {
		t.Fatal("cursor pages differ")
	}

	// Bad cursors.
	for what, cur := range map[string]string{
		"empty":          "",
		"not base64":     "!!!",
		"not JSON":       base64.RawURLEncoding.EncodeToString([]byte("offset=50")),
		"trailing data":  base64.RawURLEncoding.EncodeToString(append(raw, []byte(" {}")...)),
		"extra field":    recursor(t, c, func(m map[string]any) { m["x"] = 1 }),
		"other binding":  recursor(t, c, func(m map[string]any) { m["query_binding"] = "0123456789abcdef" }),
		"offset zero":    recursor(t, c, func(m map[string]any) { m["offset"] = 0 }),
		"negative":       recursor(t, c, func(m map[string]any) { m["offset"] = -5 }),
		"past the end":   recursor(t, c, func(m map[string]any) { m["offset"] = 124 }),
		"not an integer": recursor(t, c, func(m map[string]any) { m["offset"] = "50" }),
		"search binding": encodeCursor(50, queryBinding(toolSearchWorkflows, nil, false, "")),
	} {
		badCursorRefused(t, s, "list_workflows", map[string]any{"cursor": cur}, what)
	}

	// A cursor from a server with another set of workflows is foreign; the
	// catalog-mode server of the same set hands out search cursors, which
	// list_workflows refuses too.
	e.demo("zz-new", testBundle{salt: "new"})
	s2 := start(t, e.opts())
	badCursorRefused(t, s2, "list_workflows", map[string]any{"cursor": c}, "cursor of another listing")
	o := e.opts()
	o.ToolMode = "catalog"
	s3 := start(t, o)
	sc, _ := s3.call("search_workflows", map[string]any{"limit": 10})["next_cursor"].(string)
	badCursorRefused(t, s2, "list_workflows", map[string]any{"cursor": sc}, "search cursor")
	badCursorRefused(t, s3, "search_workflows", map[string]any{"cursor": c}, "list cursor")
	// The same set on another server pages the same.
	s4 := start(t, e.opts())
	c2 := s2.call("list_workflows", map[string]any{"limit": 3})["next_cursor"].(string)
	if r := s4.call("list_workflows", map[string]any{"limit": 3, "cursor": c2}); errorCode(r) != "" {
		t.Fatalf("same listing on another server: %.200v", r)
	}
}

// TestSearchWorkflowsPaging: search_workflows' limit goes to 500 with a
// default of 50, and its pages walk every match once.
func TestSearchWorkflowsPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 60 {
		p := map[string]string{"note": "x"}
		if i%2 == 0 {
			p["even_field"] = "y"
		}
		e.demo(fmt.Sprintf("w%02d", i), testBundle{params: p, salt: fmt.Sprint("s", i)})
	}
	o := e.opts()
	o.ToolMode = "catalog"
	s := start(t, o)
	if p := s.call("search_workflows", map[string]any{}); len(p["workflows"].([]any)) != 50 || p["total_matches"] != 60.0 {
		t.Fatalf("default page %d of %v", len(p["workflows"].([]any)), p["total_matches"])
	}
	all := ids(s.call("search_workflows", map[string]any{"limit": 500})["workflows"].([]any))
	if len(all) != 60 {
		t.Fatalf("%d", len(all))
	}
	if got := pagedIDs(walk(t, s, "search_workflows", map[string]any{"limit": 7}), "workflows"); !slices.Equal(got, all) {
		t.Fatal("pages differ from one page")
	}
	even := walk(t, s, "search_workflows", map[string]any{"limit": 4, "query": "EVEN_field"})
	if got := pagedIDs(even, "workflows"); len(got) != 30 || even[0]["total_matches"] != 30.0 {
		t.Fatalf("%d even", len(got))
	}
	c := even[0]["next_cursor"].(string)
	badCursorRefused(t, s, "search_workflows", map[string]any{"limit": 4, "cursor": c}, "cursor of another query")
	badCursorRefused(t, s, "search_workflows", map[string]any{"query": "even_field", "available_only": true, "cursor": c}, "cursor of another available_only")
	if r := s.call("search_workflows", map[string]any{"query": "even_field  ", "cursor": c}); errorCode(r) != "" {
		t.Fatalf("the same normalized query: %.200v", r)
	}
	if r := s.call("search_workflows", map[string]any{"limit": 501}); errorCode(r) != "invalid_arguments" {
		t.Fatalf("%.200v", r)
	}
}

// writeAttentionRun plants a halted run directory (Flow's halted report,
// started at startedAt) under runs, or, with startedAt "", an encrypted
// pause without a readable report (a null created_at).
func writeAttentionRun(t *testing.T, runs, name, startedAt string) {
	t.Helper()
	dir := filepath.Join(runs, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	report := []byte("{}")
	if startedAt != "" {
		b, err := os.ReadFile("../testdata/flow/reports/standard-halted/report.json")
		if err != nil {
			t.Fatal(err)
		}
		const at = `"started_at": "2026-07-28T00:00:00+00:00"`
		if !strings.Contains(string(b), at) {
			t.Fatal("the halted report fixture changed")
		}
		report = []byte(strings.Replace(string(b), at, `"started_at": "`+startedAt+`"`, 1))
	} else if err := os.WriteFile(filepath.Join(dir, "pending_escalation.json.enc"), []byte("sealed"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), report, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAttentionKeysetPaging: list_needs_attention pages with a keyset
// cursor: items added or resolved between pages neither repeat nor hide
// the items that stayed queued, in the queue's order (newest first, a
// null created_at last, ties by id).
func TestAttentionKeysetPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "a"})
	for i := range 9 {
		writeAttentionRun(t, e.runsDir, fmt.Sprintf("run-%02d", i), fmt.Sprintf("2026-07-%02dT10:00:00+00:00", 10+i))
	}
	// Ties and null created_at.
	writeAttentionRun(t, e.runsDir, "tie-a", "2026-07-09T10:00:00+00:00")
	writeAttentionRun(t, e.runsDir, "tie-b", "2026-07-09T10:00:00+00:00")
	writeAttentionRun(t, e.runsDir, "null-a", "")
	writeAttentionRun(t, e.runsDir, "null-b", "")
	s := start(t, e.opts())

	type key struct{ at, id string }
	keys := func(items []any) []key {
		var out []key
		for _, x := range items {
			m := x.(map[string]any)
			at, _ := m["created_at"].(string)
			out = append(out, key{at, m["id"].(string)})
		}
		return out
	}
	inOrder := func(ks []key) bool {
		return slices.IsSortedFunc(ks, func(a, b key) int {
			switch {
			case a.at == "" && b.at != "":
				return 1
			case b.at == "" && a.at != "":
				return -1
			case a.at != b.at:
				return strings.Compare(b.at, a.at)
			}
			return strings.Compare(a.id, b.id)
		})
	}
	all := s.call("list_needs_attention", map[string]any{})
	if all["open_count"] != 13.0 || all["next_cursor"] != nil || !inOrder(keys(all["items"].([]any))) {
		t.Fatalf("one page: %v items, next %v, order %v", all["open_count"], all["next_cursor"], keys(all["items"].([]any)))
	}
	want := ids(all["items"].([]any))
	for _, limit := range []int{1, 2, 5, 13} {
		if got := pagedIDs(walk(t, s, "list_needs_attention", map[string]any{"limit": limit}), "items"); !slices.Equal(got, want) {
			t.Fatalf("limit %d: %v", limit, got)
		}
	}

	// Changes between pages.
	p1 := s.call("list_needs_attention", map[string]any{"limit": 4})
	seen := ids(p1["items"].([]any))
	cursor := p1["next_cursor"].(string)
	resolve := func(name string) {
		if err := os.RemoveAll(filepath.Join(e.runsDir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The newest four were run-08..run-05; resolve the cursor's own item
	// and one not yet seen, add one newer than everything (before the
	// cursor: the next pages do not show it) and one older (they do).
	// Two newer ones: an offset would now repeat items of the first page.
	resolve("run-05")
	resolve("run-02")
	writeAttentionRun(t, e.runsDir, "run-new", "2026-08-30T10:00:00+00:00")
	writeAttentionRun(t, e.runsDir, "run-new2", "2026-08-31T10:00:00+00:00")
	writeAttentionRun(t, e.runsDir, "run-old", "2026-06-01T10:00:00+00:00")
	rest := walk(t, s, "list_needs_attention", map[string]any{"limit": 3, "cursor": cursor})
	if rest[0]["open_count"] != 14.0 {
		t.Fatalf("open_count %v", rest[0]["open_count"])
	}
	got := append(seen, pagedIDs(rest, "items")...)
	now := ids(s.call("list_needs_attention", map[string]any{"limit": 500})["items"].([]any))
	// Expected: the first page, then every current item after it in order.
	var expect []string
	expect = append(expect, seen...)
	for _, id := range now {
		if !slices.Contains(seen, id) && id != attention.ID("run-new") && id != attention.ID("run-new2") {
			expect = append(expect, id)
		}
	}
	if !slices.Equal(got, expect) {
		t.Fatalf("pages across changes:\n got %v\nwant %v", got, expect)
	}
	if len(got) != 4+(13-4-1)+1 { // first page, the rest but run-02, run-old
		t.Fatalf("%d items", len(got))
	}

	// Bad cursors: malformed, foreign (another server on the same runs
	// folder), a workflow cursor, an id that is no item id.
	raw, _ := base64.RawURLEncoding.DecodeString(cursor)
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, e.opts())
	badCursorRefused(t, s2, "list_needs_attention", map[string]any{"cursor": cursor}, "another server's cursor")
	for what, cur := range map[string]string{
		"empty":           "",
		"not base64":      "%%%",
		"workflow cursor": encodeCursor(1, attentionBinding("x")),
		"bad id":          recursor(t, cursor, func(m map[string]any) { m["after"].(map[string]any)["id"] = "../x" }),
		"extra field":     recursor(t, cursor, func(m map[string]any) { m["offset"] = 1 }),
	} {
		badCursorRefused(t, s, "list_needs_attention", map[string]any{"cursor": cur}, what)
	}
	for _, bad := range []any{0, 501, "1"} {
		if r := s.call("list_needs_attention", map[string]any{"limit": bad}); errorCode(r) != "invalid_arguments" {
			t.Errorf("limit %v: %.200v", bad, r)
		}
	}
}

// TestDefaultPageStaysSmall: at thousands of bundles the default pages of
// list_workflows and search_workflows stay a few tens of KiB, and
// per-workflow mode says once, in the banner and in list_workflows' note,
// that catalog mode is the way for this many.
func TestDefaultPageStaysSmall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("thousands of bundles")
	}
	e := newEnv(t)
	const n = 2000
	for i := range n {
		writeBundle(t, filepath.Join(e.bundles, fmt.Sprintf("b%05d", i)), testBundle{name: "Demo Triage",
			params:  map[string]string{"patient_note": "x", "follow_up_date": "y", "department": "z"},
			intents: []string{"Open the patient chart", "type note"}, salt: fmt.Sprint("big", i)})
	}
	o := e.opts()
	o.AllowRun = true
	s := start(t, o)
	const bound = 48 << 10
	p := s.call("list_workflows", map[string]any{})
	b, _ := json.Marshal(p)
	if len(b) > bound || p["total_matches"] != float64(n) || len(p["workflows"].([]any)) != defaultPageLimit {
		t.Fatalf("default list_workflows page: %d bytes, total %v", len(b), p["total_matches"])
	}
	t.Logf("default list_workflows page at %d bundles: %d bytes", n, len(b))
	note, _ := p["note"].(string)
	if note != noteCatalogAdvised || strings.Count(s.srv.Banner(), "--tool-mode catalog") != 1 {
		t.Fatalf("note %q; banner %q", note, s.srv.Banner())
	}
	o.ToolMode = "catalog"
	sc := start(t, o)
	p = sc.call("search_workflows", map[string]any{"query": "patient"})
	b, _ = json.Marshal(p)
	if len(b) > bound || p["total_matches"] != float64(n) {
		t.Fatalf("default search_workflows page: %d bytes, total %v", len(b), p["total_matches"])
	}
	if strings.Contains(sc.srv.Banner(), "--tool-mode catalog") {
		t.Fatal("catalog mode advises catalog mode")
	}
}

// TestCatalogAdviceThreshold: at the threshold per-workflow mode says
// nothing; one workflow more and the banner and every list_workflows page
// say it once (the read-only note first).
func TestCatalogAdviceThreshold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range CatalogModeAdvisedAbove {
		writeBundle(t, filepath.Join(e.bundles, fmt.Sprintf("b%04d", i)), testBundle{name: "x", params: map[string]string{"a": "b"}, salt: fmt.Sprint("t", i)})
	}
	s := start(t, e.opts())
	if note := s.call("list_workflows", map[string]any{})["note"]; note != noteRunToolsDisabled || strings.Contains(s.srv.Banner(), "--tool-mode catalog") {
		t.Fatalf("at the threshold: %v", note)
	}
	writeBundle(t, filepath.Join(e.bundles, "zzzz"), testBundle{name: "x", salt: "one more"})
	s = start(t, e.opts())
	for i, p := range walk(t, s, "list_workflows", map[string]any{"limit": 200}) {
		if p["note"] != noteRunToolsDisabled+" "+noteCatalogAdvised {
			t.Fatalf("page %d note %v", i, p["note"])
		}
	}
	if strings.Count(s.srv.Banner(), "--tool-mode catalog") != 1 {
		t.Fatalf("banner %q", s.srv.Banner())
	}
}
