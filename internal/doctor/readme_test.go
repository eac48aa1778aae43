package doctor

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESnippets keeps the README's "Connecting agents" section and
// doctor's registration fixes the same text: each agent's snippet, rendered
// for the README's placeholder folders, must appear in README.md verbatim
// (without doctor's "add to …" heading line).
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--bundles", "/ABSOLUTE/PATH/TO/bundles"}
	for _, a := range agents {
		s := a.snippet(ExePlaceholder, args)
		if head, body, ok := strings.Cut(s, "\n"); ok && strings.HasPrefix(head, "add to ") {
			s = body
		}
		if !strings.Contains(string(readme), s+"\n") {
			t.Errorf("README.md does not show doctor's %s snippet:\n%s", a.name, s)
		}
	}
}
