package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoRegexpAtInit fails when a package-level variable of this module's
// non-test code calls regexp.MustCompile or regexp.Compile, which would run
// at package init of every command (use New instead).
func TestNoRegexpAtInit(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		n++
		if f.Name.Name == "main" {
			return nil // a separate program (tools under internal/release, bench/), not the binary's init
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			ast.Inspect(g, func(x ast.Node) bool {
				if _, ok := x.(*ast.FuncLit); ok {
					return false // runs when called, not at init
				}
				if c, ok := x.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok {
						if id, ok := s.X.(*ast.Ident); ok && id.Name == "regexp" && (s.Sel.Name == "MustCompile" || s.Sel.Name == "Compile" || s.Sel.Name == "MustCompilePOSIX") {
							t.Errorf("%s: package-level regexp.%s runs at init; use lazyre.New", p, s.Sel.Name)
						}
					}
				}
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("walked only %d Go files", n)
	}
}
