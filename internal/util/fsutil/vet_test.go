package fsutil

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// exempt are trees and files that may call os.ReadFile/os.Open directly,
// with the reason (every input goes through this package's bounded read).
var exempt = map[string]string{
	"internal/util/fsutil/":                  "the helper itself",
	"internal/testing/":                      "test support, never in the binary",
	"bench/":                                 "benchmark programs, not shipped",
	"internal/release/":                      "release tool over build outputs, not shipped",
	"internal/util/procgroup/group_linux.go": "reads /proc/<pid>/stat, a kernel file",
}

// pending are files in other lanes still to be switched (each names its
// owner). The test logs, not fails, when one is already clean, so the
// owner can delete the line in the same commit.
var pending = map[string]string{}

// TestNoDirectReads is a vet-style check over the source: outside this
// package and tests, no file calls os.ReadFile or os.Open. Reads of inputs
// go through [ReadFile]/[Open] (regular files only, capped, cancelable);
// reads beneath an untrusted folder through [Root].
func TestNoDirectReads(t *testing.T) {
	modRoot, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modRoot, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	var bad []string
	clean := map[string]bool{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(modRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(modRoot, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for prefix := range exempt {
			if strings.HasPrefix(rel, prefix) {
				return nil
			}
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		osName := ""
		for _, im := range f.Imports {
			if im.Path.Value == `"os"` {
				osName = "os"
				if im.Name != nil {
					osName = im.Name.Name
				}
			}
		}
		if osName == "" {
			clean[rel] = true
			return nil
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// os.Open(os.DevNull) (a child's stdin) reads no input.
			if len(call.Args) == 1 {
				if a, ok := call.Args[0].(*ast.SelectorExpr); ok && a.Sel.Name == "DevNull" {
					return true
				}
			}
			id, ok := sel.X.(*ast.Ident)
			if !ok || id.Name != osName || (sel.Sel.Name != "ReadFile" && sel.Sel.Name != "Open") {
				return true
			}
			found = true
			if _, ok := pending[rel]; !ok {
				bad = append(bad, fset.Position(sel.Pos()).String()[len(modRoot)+1:]+": os."+sel.Sel.Name)
			}
			return true
		})
		if !found {
			clean[rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s outside internal/util/fsutil: read inputs with fsutil.ReadFile/fsutil.Open (regular files only, capped, cancelable)", b)
	}
	for p, owner := range pending {
		if clean[p] {
			t.Logf("%s no longer reads directly; remove it from pending (%s)", p, owner)
		}
	}
}

// TestReadmeListsCaps keeps the README's "Input size caps" table equal to
// [Limits].
func TestReadmeListsCaps(t *testing.T) {
	b, err := ReadFile(context.Background(), filepath.Join("..", "..", "..", "README.md"), Limit{"README", 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, l := range Limits {
		row := "| " + l.Kind + " | " + FormatSize(l.Max) + " |"
		if !strings.Contains(readme, row) {
			t.Errorf("README lacks the row %q", row)
		}
	}
}
