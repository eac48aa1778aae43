package templates

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// Every template has a golden file; regenerate with
// `go test ./templates -update` and review the diff.
func TestAppendixGolden(t *testing.T) {
	tests := []struct {
		name   string
		params []string
	}{
		{"appendix-note", []string{"note"}},
		{"appendix-none", []string{}},
		{"appendix-three", []string{"a.b", "dose_mg", "note"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render("appendix.md.tmpl", map[string]any{
				"WorkflowID":     "workflow_0123456789abcdef01234567",
				"RequiredParams": tt.params,
			})
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", tt.name+".md"), got)
		})
	}
}

// Each part renders on its own too, so each has a golden.
func TestPartsGolden(t *testing.T) {
	data := map[string]any{"WorkflowID": "workflow_0123456789abcdef01234567", "RequiredParams": []string{"note"}, "Reason": "reserved_parameter_name"}
	for _, name := range Names() {
		if name == "appendix.md.tmpl" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			got, err := Render(name, data)
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", strings.TrimSuffix(name, ".tmpl")), got)
		})
	}
}

func TestAppendixShape(t *testing.T) {
	got, err := Render("appendix.md.tmpl", map[string]any{"WorkflowID": "workflow_x", "RequiredParams": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.HasPrefix(s, "<!-- openadapt-agent:skill-appendix v1 -->\n\n## Invoking via MCP (openadapt-agent)\n") {
		t.Errorf("appendix does not start with the marker and heading:\n%s", s[:80])
	}
	if !strings.HasSuffix(s, "substitute one action for another.\n") || strings.HasSuffix(s, "\n\n") {
		t.Errorf("appendix must end with exactly one newline")
	}
	if !strings.Contains(s, "(required parameters: none)") {
		t.Errorf("empty parameter list must render as none")
	}
	if n := strings.Count(s, "run_workflow_x"); n != 3 {
		t.Errorf("run tool named %d times, want 3", n)
	}
}

func TestNames(t *testing.T) {
	want := []string{"appendix-unavailable.md.tmpl", "appendix.md.tmpl", "attention.md.tmpl", "halt.md.tmpl", "invoke.md.tmpl", "seal.md.tmpl"}
	if diff := cmp.Diff(want, Names()); diff != "" {
		t.Errorf("Names() (-want +got):\n%s", diff)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		tmpl     string
		data     map[string]any
		unsafe   bool
		contains string
	}{
		{name: "missing key", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "workflow_x"}, contains: "RequiredParams"},
		{name: "unknown template", tmpl: "nope.md.tmpl", data: map[string]any{}, contains: "no such template"},
		{name: "backtick", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "w", "RequiredParams": []string{"a`b"}}, unsafe: true},
		{name: "angle", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "w", "RequiredParams": []string{"<x>"}}, unsafe: true},
		{name: "control", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "w", "RequiredParams": []string{"a\tb"}}, unsafe: true},
		{name: "c1 control", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "w", "RequiredParams": []string{"a\u0085b"}}, unsafe: true},
		{name: "empty name", tmpl: "appendix.md.tmpl", data: map[string]any{"WorkflowID": "w", "RequiredParams": []string{""}}, unsafe: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tt.tmpl, tt.data)
			if err == nil {
				t.Fatal("Render succeeded, want an error")
			}
			if tt.unsafe != errors.Is(err, ErrUnsafeValue) {
				t.Errorf("errors.Is(err, ErrUnsafeValue) = %v, want %v (%v)", !tt.unsafe, tt.unsafe, err)
			}
			if tt.contains != "" && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not mention %q", err, tt.contains)
			}
		})
	}
}

func ExampleRender() {
	out, err := Render("seal.md.tmpl", map[string]any{"WorkflowID": "workflow_0123456789abcdef01234567", "RequiredParams": []string{}})
	if err != nil {
		panic(err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	fmt.Println(first)
	// Output: ## Seal requirement
}
