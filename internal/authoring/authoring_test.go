package authoring

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSafeLabel(t *testing.T) {
	for in, want := range map[any]string{
		"Save":                  "Save",
		"  Save \n  draft ":     "Save draft",
		"Patient chart v2.1":    "Patient chart v2.1",
		"jane@example.com":      "",
		"https://ehr.example":   "",
		"MRN 1234567":           "",
		"123456":                "",
		"SSN 123-45-6789":       "",
		"Call 555-123-4567":     "",
		"Call 555 123 4567":     "",
		"Dr. O'Brien":           "",
		"<script>":              "",
		"":                      "",
		" ":                     "",
		"-leading dash":         "",
		"Ünïcode":               "",
		strings.Repeat("a", 81): "",
		strings.Repeat("a", 80): strings.Repeat("a", 80),
		"Room 12345":            "Room 12345",
		42:                      "",
		true:                    "",
	} {
		if got := SafeLabel(in); got != want {
			t.Errorf("SafeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

func node(i int, extra map[string]any) map[string]any {
	n := map[string]any{
		"node_id": fmt.Sprintf("n_%08x", i), "role": "button", "name": fmt.Sprintf("Button %d", i%1000),
		"enabled": true, "focused": false, "bounds": map[string]any{"x": 0.1, "y": 0.2, "w": 0.3, "h": 0.4},
	}
	for k, v := range extra {
		n[k] = v
	}
	return n
}

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestProjectObserveHostile(t *testing.T) {
	raw := map[string]any{
		"backend": "web", "provider": "playwright_ax", "recording": true,
		"window":     map[string]any{"process_name": "Chromium", "title": "Jane Doe", "url": "https://x", "bounds": map[string]any{"x": 0, "y": 0, "w": 1, "h": 1}},
		"screenshot": "AAAA", "ocr": "Jane Doe DOB 01/02/1960", "value": "v",
		"tree": []any{
			node(1, map[string]any{"value": "SECRET-V", "text": "SECRET-T", "title": "SECRET-TITLE", "backend_pixels": map[string]any{"x": 5}, "url": "https://secret"}),
			node(2, map[string]any{"name": "jane@example.com", "automation_id": "MRN 1234567", "control_type": "Edit", "class_name": strings.Repeat("C", 70)}),
			node(3, map[string]any{"role": "evil_role"}),
			node(4, map[string]any{"node_id": "n_BADHEX00"}),
			node(5, map[string]any{"node_id": "node-5"}),
			node(6, map[string]any{"bounds": map[string]any{"x": 0.9, "y": 0, "w": 0.2, "h": 0.1}}),
			node(7, map[string]any{"bounds": map[string]any{"x": -0.1, "y": 0, "w": 0.2, "h": 0.1}}),
			node(8, map[string]any{"bounds": map[string]any{"x": "0", "y": 0, "w": 0.2, "h": 0.1}}),
			node(9, map[string]any{"enabled": "yes"}),
			node(1, map[string]any{"name": "Duplicate"}),
			"not a node",
		},
	}
	got := marshal(t, ProjectObserve(raw))
	want := `{"schema_version":"openadapt.authoring.observe/v1","backend":"web","provider":"playwright_ax","mode":"authoring","agent_drive":true,"coach_only":false,"recording":true,` +
		`"window":{"process_name":"Chromium","role":"window","bounds":{"x":0,"y":0,"w":1,"h":1}},"tree":[` +
		`{"node_id":"n_00000001","role":"button","name":"Button 1","enabled":true,"focused":false,"bounds":{"x":0.1,"y":0.2,"w":0.3,"h":0.4}},` +
		`{"node_id":"n_00000002","role":"button","control_type":"Edit","class_name":"` + strings.Repeat("C", 64) + `","enabled":true,"focused":false,"bounds":{"x":0.1,"y":0.2,"w":0.3,"h":0.4}},` +
		`{"node_id":"n_00000003","role":"unknown","name":"Button 3","enabled":true,"focused":false,"bounds":{"x":0.1,"y":0.2,"w":0.3,"h":0.4}}` +
		`],"truncated":false,"node_count":3}`
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("projection (-want +got):\n%s", d)
	}
	for _, s := range []string{"SECRET", "Jane", "jane@", "1234567", "https", "AAAA", "title", "value", "text", "pixels"} {
		if strings.Contains(got, s) {
			t.Errorf("projection holds %q", s)
		}
	}
}

func TestProjectObserveLimits(t *testing.T) {
	var tree []any
	for i := range 500 {
		tree = append(tree, node(i, nil))
	}
	o := ProjectObserve(map[string]any{"backend": "web", "provider": "playwright_ax", "tree": tree})
	if len(o.Tree) != MaxObserveNodes || o.NodeCount != MaxObserveNodes || !o.Truncated {
		t.Fatalf("500 nodes: kept %d (count %d, truncated %v)", len(o.Tree), o.NodeCount, o.Truncated)
	}
	// Long labels push 200 nodes over 32 KiB: the tail is dropped to fit.
	tree = nil
	for i := range 300 {
		tree = append(tree, node(i, map[string]any{"name": strings.Repeat("N", 80), "automation_id": strings.Repeat("A", 80), "control_type": strings.Repeat("T", 80)}))
	}
	o = ProjectObserve(map[string]any{"backend": "web", "provider": "playwright_ax", "tree": tree})
	b := marshal(t, o)
	if len(b) > MaxObserveBytes || !o.Truncated || o.NodeCount != len(o.Tree) || len(o.Tree) >= MaxObserveNodes || len(o.Tree) < 50 {
		t.Fatalf("kept %d nodes in %d bytes (truncated %v)", len(o.Tree), len(b), o.Truncated)
	}
	// It keeps as many as fit: one more node would not.
	o2 := o
	o2.Tree = append(append([]Node(nil), o.Tree...), o.Tree[0])
	o2.NodeCount++
	if len(marshal(t, o2)) <= MaxObserveBytes {
		t.Errorf("dropped more nodes than needed (%d kept)", len(o.Tree))
	}
}

func TestProjectObserveCoachOnlyAndUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  map[string]any
		want string
	}{
		{"coach-only backend", map[string]any{"backend": "citrix", "provider": "none", "tree": []any{node(1, nil)}},
			`{"schema_version":"openadapt.authoring.observe/v1","backend":"citrix","provider":"none","mode":"authoring","agent_drive":false,"coach_only":true,"recording":false,"tree":[],"truncated":false,"node_count":0,"reason":"empty_projection"}`},
		{"unknown backend", map[string]any{"backend": "mainframe", "provider": "x3270", "tree": []any{node(1, nil)}},
			`{"schema_version":"openadapt.authoring.observe/v1","backend":"windows","provider":"none","mode":"authoring","agent_drive":false,"coach_only":true,"recording":false,"tree":[],"truncated":false,"node_count":0,"reason":"empty_projection"}`},
		{"no window means no agent drive", map[string]any{"backend": "linux", "provider": "linux_atspi", "tree": []any{node(1, nil)}},
			`{"schema_version":"openadapt.authoring.observe/v1","backend":"linux","provider":"linux_atspi","mode":"authoring","agent_drive":false,"coach_only":false,"recording":false,"tree":[{"node_id":"n_00000001","role":"button","name":"Button 1","enabled":true,"focused":false,"bounds":{"x":0.1,"y":0.2,"w":0.3,"h":0.4}}],"truncated":false,"node_count":1}`},
		{"empty", map[string]any{},
			`{"schema_version":"openadapt.authoring.observe/v1","backend":"windows","provider":"none","mode":"authoring","agent_drive":false,"coach_only":true,"recording":false,"tree":[],"truncated":false,"node_count":0,"reason":"empty_projection"}`},
	} {
		if d := cmp.Diff(tc.want, marshal(t, ProjectObserve(tc.raw))); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

func TestResultProjections(t *testing.T) {
	if got := marshal(t, ProjectCompile(map[string]any{"status": "VERIFIED", "workflow_id": "wf_abcdefgh", "path": "/x"})); got != `{"status":"needs_human_admit","workflow_id":"wf_abcdefgh","recording_retained":true}` {
		t.Errorf("compile = %s", got)
	}
	if got := marshal(t, ProjectCompile(map[string]any{"workflow_id": "Jane Doe"})); got != `{"status":"needs_human_admit","recording_retained":true}` {
		t.Errorf("compile with a bad id = %s", got)
	}
	if got := marshal(t, ProjectGetCoach(map[string]any{"hint": "call jane@example.com"})); got != `{"hint":null}` {
		t.Errorf("get_coach = %s", got)
	}
	if got := marshal(t, NewErrorResult(CodeCoachOnly)); got != `{"status":"error","reason":"coach_only"}` {
		t.Errorf("error = %s", got)
	}
	if CodeCoachOnly.Mailbox() != "COACH_ONLY" || CodeReconcile.Mailbox() != "RECONCILIATION_REQUIRED" || CodeStaleNode.Mailbox() != "stale_node" {
		t.Error("mailbox spellings")
	}
}

// press takes a named key that types no character, optionally after each
// modifier at most once; the same grammar as the helper's.
func TestValidPressKey(t *testing.T) {
	for _, k := range []string{"Enter", "Tab", "Escape", "Backspace", "Delete", "ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight",
		"Home", "End", "PageUp", "PageDown", "F1", "F9", "F10", "F12", "Control+End", "Shift+Tab", "Control+Alt+Meta+Shift+F12", "Meta+ArrowLeft"} {
		if !ValidPressKey(k) {
			t.Errorf("%q refused", k)
		}
	}
	for _, k := range []string{"", "a", "A", "1", " ", "Space", "Shift+a", "Control+c", "Control+Control+End", "enter", "ENTER", "F0", "F13",
		"Control+", "+Enter", "Enter+Control", " Enter", "Enter\n", "Ctrl+End", "Cmd+End", "Control+Alt+Meta+Shift+Control+End"} {
		if ValidPressKey(k) {
			t.Errorf("%q accepted", k)
		}
	}
}
