package cmd

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayers checks the import layers of docs/architecture.md: utilities
// import no other package of this module; the Flow bridges only utilities
// and each other; features only utilities, bridges, other features and the
// verification libraries (bundle, ledger); bundle and ledger only
// utilities; skill never reaches Flow itself (it gets a runner); and
// nothing but cmd imports cmd. Test-only imports are not counted.
func TestLayers(t *testing.T) {
	t.Parallel()
	const mod = "github.com/OpenAdaptAI/openadapt-agent/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layer := func(p string) string {
		switch {
		case strings.HasPrefix(p, "internal/util/"):
			return "utility"
		case strings.HasPrefix(p, "internal/flow/"):
			return "bridge"
		case strings.HasPrefix(p, "internal/testing/"), strings.HasPrefix(p, "internal/release"), strings.HasPrefix(p, "bench/"):
			return "support"
		case strings.HasPrefix(p, "internal/"):
			return "feature"
		case p == "bundle", p == "ledger":
			return "verification"
		case strings.HasPrefix(p, "cmd"):
			return "cmd"
		}
		return "public"
	}
	allowed := map[string]map[string]bool{
		"utility":      {},
		"bridge":       {"utility": true, "bridge": true},
		"verification": {"utility": true, "verification": true},
		"feature":      {"utility": true, "bridge": true, "feature": true, "verification": true},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg, ok := strings.CutPrefix(f[0], mod)
		if !ok {
			continue
		}
		from := layer(pkg)
		for _, imp := range f[1:] {
			dep, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			to := layer(dep)
			checked++
			switch {
			case to == "cmd" && from != "cmd":
				t.Errorf("%s imports %s: nothing but cmd imports cmd", pkg, dep)
			case pkg == "skill" && to == "bridge":
				t.Errorf("skill imports %s: skill gets a Flow runner and never starts Flow itself", dep)
			case allowed[from] != nil && !allowed[from][to]:
				t.Errorf("%s (%s) imports %s (%s): an upward import", pkg, from, dep, to)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d imports checked; the test would prove nothing", checked)
	}
}
