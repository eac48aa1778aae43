//go:build unix

package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMESkillDigests: the sample output of the README's skill section
// (the archive digest and the folder's h1 digest, both abbreviated) is what
// `skill emit --from-flow-skill` then `skill pack` print today for the same
// vector skill, so the README cannot go stale when the archive bytes move.
func TestREADMESkillDigests(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	archive := regexp.MustCompile(`(?m)^# (sha256:[0-9a-f]{8})…  mockmed-triage\.skill$`).FindSubmatch(readme)
	folder := regexp.MustCompile(`(?m)^# (h1:[A-Za-z0-9+/]{8})…=  mockmed-triage/$`).FindSubmatch(readme)
	if archive == nil || folder == nil {
		t.Fatal("README: the skill section's sample pack output lines are missing")
	}
	src, err := filepath.Abs("../testdata/flow/skills/mockmed-triage-v3/mockmed-triage")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if code, _, errs := runCLI("skill", "emit", "--from-flow-skill", src, "--out", out); code != 0 {
		t.Fatalf("skill emit: exit %d: %s", code, errs)
	}
	pack := filepath.Join(dir, "mockmed-triage.skill")
	code, stdout, errs := runCLI("skill", "pack", filepath.Join(out, "mockmed-triage"), "-o", pack)
	if code != 0 {
		t.Fatalf("skill pack: exit %d: %s", code, errs)
	}
	for _, want := range []string{string(archive[1]), string(folder[1])} {
		if !strings.Contains(stdout, want) {
			t.Errorf("README shows %s…, skill pack printed:\n%s", want, stdout)
		}
	}
}
