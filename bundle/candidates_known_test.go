package bundle

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// CandidatesKnown gives what Candidates gives when marked is nil or true
// only for folders holding a marker, takes a folder marked true as a
// candidate without looking, and still looks at every other folder.
func TestCandidatesKnown(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b", "empty", "sealed"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range map[string]string{"a/workflow.json": "{}", "b/workflow.json": "{}", "sealed/workflow.json.enc": "x"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs := func(cs []Candidate) []string {
		var out []string
		for _, c := range cs {
			out = append(out, filepath.Base(c.Dir))
		}
		return out
	}
	want, err := Candidates(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := dirs(want); !slices.Equal(got, []string{"a", "b", "sealed"}) {
		t.Fatalf("Candidates: %v", got)
	}
	asked := map[string]bool{}
	for name, marked := range map[string]func(string) bool{
		"nil":            nil,
		"bundles marked": func(d string) bool { asked[filepath.Base(d)] = true; return filepath.Base(d) == "a" },
	} {
		got, err := CandidatesKnown(root, marked)
		if err != nil || !slices.Equal(dirs(got), dirs(want)) {
			t.Fatalf("%s: %v %v, want %v", name, dirs(got), err, dirs(want))
		}
	}
	if !asked["a"] || !asked["empty"] {
		t.Fatalf("marked was not asked about every child folder: %v", asked)
	}
	// A folder marked true is taken without looking (the caller has just
	// seen its marker): the contract, shown with a folder that has none.
	got, _ := CandidatesKnown(root, func(d string) bool { return filepath.Base(d) == "empty" })
	if !slices.Equal(dirs(got), []string{"a", "b", "empty", "sealed"}) {
		t.Fatalf("marked folder not taken: %v", dirs(got))
	}
}
