package cmd

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryHasNoTestingPackages proves that test support stays out of the
// shipped binary: nothing under internal/testing/ may be a dependency of
// ./cmd/openadapt-agent (sigstore-go keeps its fakes in pkg/testing the same way).
func TestBinaryHasNoTestingPackages(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "./openadapt-agent").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const prefix = "github.com/OpenAdaptAI/openadapt-agent/internal/testing"
	var n int
	for _, p := range strings.Fields(string(out)) {
		n++
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			t.Errorf("the binary depends on test-only package %s", p)
		}
	}
	if n < 10 {
		t.Fatalf("go list -deps printed %d packages; the check would prove nothing", n)
	}
}
