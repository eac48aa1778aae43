package flowrun

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"openadapt-flow", []string{"openadapt-flow"}},
		{"  python3   -m\topenadapt_flow\n", []string{"python3", "-m", "openadapt_flow"}},
		{`/opt/my\ flow/bin/flow run`, []string{"/opt/my flow/bin/flow", "run"}},
		{`'/opt/my flow/bin/flow' --x`, []string{"/opt/my flow/bin/flow", "--x"}},
		{`"/opt/my flow/bin/flow"`, []string{"/opt/my flow/bin/flow"}},
		{`a'b'"c"d`, []string{"abcd"}},
		{`'' ""`, []string{"", ""}},
		{`x ''`, []string{"x", ""}},
		// No expansion of any kind.
		{`$HOME ~ *.py a;b a|b a&&b >out`, []string{"$HOME", "~", "*.py", "a;b", "a|b", "a&&b", ">out"}},
		{`"$HOME" '$HOME' \$HOME`, []string{"$HOME", "$HOME", "$HOME"}},
		// Backslash in double quotes escapes only $ ` " \ and newline.
		{`"a\$b\"c\\d\e\n"`, []string{`a$b"c\d\e\n`}},
		{"\"a\\\nb\"", []string{"ab"}},
		// Backslash in single quotes is literal.
		{`'a\b\'`, []string{`a\b\`}},
		// Unquoted backslash keeps the next character; backslash-newline joins.
		{`a\\b \'x\"`, []string{`a\b`, `'x"`}},
		{"a\\\nb c", []string{"ab", "c"}},
		{`\ `, []string{" "}},
		// UTF-8 passes through, also after a backslash.
		{`flöw \é "ü" 'ß'`, []string{"flöw", "é", "ü", "ß"}},
		// A single quote inside double quotes and vice versa.
		{`"it's" 'say "hi"'`, []string{"it's", `say "hi"`}},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if err != nil {
			t.Errorf("SplitCommand(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("SplitCommand(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSplitCommandErrors(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"", ErrEmptyCommand},
		{" \t\n ", ErrEmptyCommand},
		{"\\\n", ErrEmptyCommand},
		{`flow 'secret`, ErrCommandSyntax},
		{`flow "secret`, ErrCommandSyntax},
		{`flow "secret\"`, ErrCommandSyntax},
		{`flow secret\`, ErrCommandSyntax},
	}
	for _, tt := range tests {
		got, err := SplitCommand(tt.in)
		if !errors.Is(err, tt.want) || got != nil {
			t.Errorf("SplitCommand(%q) = %q, %v; want error %v", tt.in, got, err, tt.want)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("SplitCommand(%q): %v does not wrap ErrInvalid", tt.in, err)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("SplitCommand(%q): error %q repeats the input", tt.in, err)
		}
	}
}

// FuzzSplitCommand checks that quoting every word and joining them splits
// back to the same words, and that no input panics.
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"openadapt-flow", `a 'b c' "d\"e" f\ g`, "", `'`, `"\`, "x\\\ny"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitCommand(s)
		if err != nil {
			return
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := SplitCommand(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("re-split of quoted %q: %v", words, err)
		}
		if diff := cmp.Diff(words, again); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}

func ExampleSplitCommand() {
	words, err := SplitCommand(`python3 -m openadapt_flow --extra "two words" it\'s`)
	fmt.Printf("%q %v\n", words, err)
	// Output: ["python3" "-m" "openadapt_flow" "--extra" "two words" "it's"] <nil>
}
