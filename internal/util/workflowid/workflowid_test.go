package workflowid

import (
	"regexp"
	"strings"
	"testing"
)

var (
	patternRE = regexp.MustCompile(Pattern)
	baseRE    = regexp.MustCompile(`^workflow_[0-9a-f]{24}$`)
)

func TestValid(t *testing.T) {
	hex := strings.Repeat("0a", 12)
	for id, want := range map[string]bool{
		"workflow_" + hex:                  true,
		"workflow_" + hex + "_2":           true,
		"workflow_" + hex + "_10":          true,
		"workflow_" + hex + "_1":           true,
		"local_quickstart":                 true,
		"":                                 false,
		"workflow_":                        false,
		"workflow_" + hex[:23]:             false,
		"workflow_" + hex + "0":            false,
		"workflow_" + strings.ToUpper(hex): false,
		"workflow_" + hex + "_":            false,
		"workflow_" + hex + "_0":           false,
		"workflow_" + hex + "_02":          false,
		"workflow_" + hex + "_2a":          false,
		"workflow_" + hex + "\n":           false,
		"workflow_" + hex + "_2\n":         false,
		"local_quickstart_2":               false,
		"Local_quickstart":                 false,
		"run_workflow_" + hex:              false,
		"workflow-" + hex:                  false,
		"workflow_" + hex[:22] + "g0":      false,
	} {
		if got := Valid(id); got != want || got != patternRE.MatchString(id) {
			t.Errorf("Valid(%q) = %v, want %v (pattern %v)", id, got, want, patternRE.MatchString(id))
		}
		if got := ValidBase(id); got != baseRE.MatchString(id) {
			t.Errorf("ValidBase(%q) = %v", id, got)
		}
	}
}

// FuzzValid: the byte loops accept exactly the strings Pattern (and the
// base pattern) match.
func FuzzValid(f *testing.F) {
	hex := strings.Repeat("0a", 12)
	for _, s := range []string{"workflow_" + hex, "workflow_" + hex + "_12", "local_quickstart", "workflow_" + hex + "_0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if Valid(id) != patternRE.MatchString(id) {
			t.Fatalf("Valid(%q) = %v, pattern says %v", id, Valid(id), patternRE.MatchString(id))
		}
		if ValidBase(id) != baseRE.MatchString(id) {
			t.Fatalf("ValidBase(%q) = %v", id, ValidBase(id))
		}
	})
}
