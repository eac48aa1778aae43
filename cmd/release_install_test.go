package cmd

import (
	"os"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/doctor"
)

// TestInstallHintMatchesREADME: doctor's install hint names the two ways
// the README's Install section shows (a verified release archive, go
// install once published), with the same URL and command.
func TestInstallHintMatchesREADME(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "\n## Install\n")
	if start < 0 {
		t.Fatal("README.md has no Install section")
	}
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	base := strings.TrimSuffix(doctor.ReleasesURL, "/releases")
	for _, want := range []string{doctor.InstallCommand, base + "/releases/download/", "release verify checksums.txt", "sha256sum --ignore-missing -c checksums.txt"} {
		if !strings.Contains(section, want) {
			t.Errorf("the README's Install section does not show %q", want)
		}
	}
	for _, want := range []string{doctor.InstallCommand, doctor.ReleasesURL, "README's Install section"} {
		if !strings.Contains(doctor.InstallHint, want) {
			t.Errorf("doctor's install hint does not name %q", want)
		}
	}
}
