// Package templates holds the text this project adds to generated files, as
// Go text/template files embedded from the package folder.
//
// The templates are `*.md.tmpl` files (a non-Go extension, so Go tooling
// ignores them) under skill/. They are parsed once, at package
// initialisation, with Option("missingkey=error"), and executed with maps, so
// a key the caller forgets fails the render instead of printing "<no value>".
// A template that does not parse is a programmer error and panics at init.
//
// Stable API: [Render] and the template names listed by [Names]. The rendered
// bytes are pinned by golden files in testdata/.
package templates

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"
)

//go:embed skill/*.md.tmpl
var files embed.FS

// ErrUnsafeValue is returned (wrapped) by [Render] when a value given to the
// codelist function cannot be placed safely inside a Markdown code span.
var ErrUnsafeValue = errors.New("value cannot be rendered safely")

// set is every template, parsed once on first use (not at package init).
// Names are the base file names, for example "appendix.md.tmpl".
var set = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").
		Option("missingkey=error").
		Funcs(template.FuncMap{"codelist": codelist}).
		ParseFS(files, "skill/*.md.tmpl"))
})

// Render executes the template called name (for example "appendix.md.tmpl")
// with data. Every key a template uses must be present in data; a missing key
// returns an error. For "appendix.md.tmpl" the keys are:
//
//   - WorkflowID: the opaque workflow id, e.g. "workflow_0123456789abcdef01234567";
//   - RequiredParams: a []string of parameter names, already sorted.
//
// It returns an error wrapping [ErrUnsafeValue] when a parameter name holds a
// backtick, '<', '>' or a control character.
func Render(name string, data map[string]any) ([]byte, error) {
	t := set().Lookup(name)
	if t == nil || name == "" {
		return nil, fmt.Errorf("rendering template %q: no such template", name)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// Names returns the names of the embedded templates, sorted.
func Names() []string {
	var names []string
	for _, t := range set().Templates() {
		if t.Name() != "" {
			names = append(names, t.Name())
		}
	}
	slices.Sort(names)
	return names
}

// codelist renders names as a comma-separated list of Markdown code spans,
// or the word none for an empty list.
func codelist(names []string) (string, error) {
	if len(names) == 0 {
		return "none", nil
	}
	var b strings.Builder
	for i, n := range names {
		if err := CheckCodeSpan(n); err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + n + "`")
	}
	return b.String(), nil
}

// CheckCodeSpan reports whether s can be placed verbatim inside a Markdown
// code span: non-empty, with no backtick, '<', '>' or control character
// (C0, DEL, C1). It returns an error wrapping [ErrUnsafeValue] otherwise; the
// error never repeats s.
func CheckCodeSpan(s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty name", ErrUnsafeValue)
	}
	for _, r := range s {
		switch {
		case r == '`', r == '<', r == '>':
			return fmt.Errorf("%w: name holds a backtick or angle bracket", ErrUnsafeValue)
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Errorf("%w: name holds a control character", ErrUnsafeValue)
		}
	}
	return nil
}
