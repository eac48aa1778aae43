package cmd

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// specNote matches the name of one of the team's contract documents, which
// live outside this repository; the same name under docs/ is one of ours.
var specNote = regexp.MustCompile(`(?:[A-Za-z0-9_./-]*/)?\b(?:mcp-surface|flow-helper|flow-run|flow-bundle|mailbox|skills|ledger)\.md\b`)

// rfcSection is the one section sign a source may carry: a section of a
// published RFC, which a reader can open.
var rfcSection = regexp.MustCompile(`RFC ?[0-9]+,? §`)

// TestSourcesCiteNothingOutside is TestDocsCiteNothingOutside for code: a
// comment in a Go, Python, shell, template or script file states the rule or
// cites a note under docs/, never a document a reader of a clone cannot
// open. Copied data (JSON vectors, golden outputs) is not read.
func TestSourcesCiteNothingOutside(t *testing.T) {
	t.Parallel()
	exts := map[string]bool{".go": true, ".py": true, ".sh": true, ".txtar": true, ".tmpl": true, ".js": true, ".mjs": true, ".html": true, ".yaml": true, ".yml": true, ".mod": true}
	self, err := filepath.Abs("sources_cite_test.go")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "dist":
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !exts[filepath.Ext(p)] {
			return nil
		}
		if abs, _ := filepath.Abs(p); abs == self || strings.HasSuffix(p, "readme_test.go") {
			return nil // the patterns themselves
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, l := range strings.Split(string(b), "\n") {
			m := outsideCitation.FindString(rfcSection.ReplaceAllString(l, ""))
			if m == "" {
				for _, n := range specNote.FindAllString(l, -1) {
					if !strings.HasPrefix(n, "docs/") && !strings.Contains(n, "/docs/") {
						m = n
						break
					}
				}
			}
			if m != "" {
				t.Errorf("%s:%d: %q cites a document outside the repository: %s", p, i+1, m, strings.TrimSpace(l))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
