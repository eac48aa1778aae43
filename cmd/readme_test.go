package cmd

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// readmeCoveredElsewhere lists README command lines that no testscript runs
// with the same shape, each with the Go test that runs it. The test must
// exist; an entry whose line left the README is an error too.
var readmeCoveredElsewhere = map[string]string{
	// The attended section: the real binary against real Flow, and the
	// terminal path against the fake helper.
	"serve --bundles ~/openadapt/bundles --runs-dir ~/openadapt/runs --allow-attended-actions --flow-python /usr/bin/python3": "TestRealFlowAttendedE2E",
	"attention list --runs-dir ~/openadapt/runs":                                                             "TestAttentionList",
	"attention escalate 302aa61015d20d93ce981a9d --runs-dir ~/openadapt/runs --flow-python /usr/bin/python3": "TestAttentionDecide",
	// Headed Continue: the real binary under Xvfb against real Flow.
	"serve --bundles ~/openadapt/bundles --runs-dir ~/openadapt/runs --allow-attended-actions --config ~/openadapt/deploy.yaml --headed --flow-python /usr/bin/python3": "TestRealFlowHeadedContinue",
	// Authoring on the stub of Flow's authoring module through the real
	// helper: serve's tools (serve) and connect's end to end (cmd).
	"serve --authoring --flow-python /path/to/flow/python3 --url https://app.example/login --headed --runs-dir ~/.openadapt/runs":              "TestAuthoringToolsEndToEnd",
	"authoring connect --url https://app.example/login --headed openadapt://runner?pack=p.AbCdEf012345&bind=oab_…&origin=https://openadapt.ai": "TestAuthoringConnectStubSessionEndToEnd",
	// doctor's helper checks: the fake helper (internal/doctor).
	"doctor --flow-python /usr/bin/python3 --config ~/openadapt/deploy.yaml --headed":                "TestHelperChecksFakeHelper",
	"doctor --flow-python /ABSOLUTE/PATH/TO/python3 --config /ABSOLUTE/PATH/TO/deploy.yaml --headed": "TestHelperChecksFakeHelper",
}

// readmeInvocation is one openadapt-agent command shown in README.md.
type readmeInvocation struct {
	line int
	text string
	args []string
}

// shellBlock reports whether a fenced code block's info string is a shell.
func shellBlock(info string) bool {
	switch strings.TrimSpace(info) {
	case "", "sh", "bash", "shell", "console", "zsh":
		return true
	}
	return false
}

var envAssign = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// agentArgs returns the arguments after the openadapt-agent program in one
// shell command (a list of words without operators), or nil.
func agentArgs(words []string) ([]string, bool) {
	for len(words) > 0 && envAssign.MatchString(words[0]) {
		words = words[1:]
	}
	var args []string
	switch {
	case len(words) > 0 && path.Base(words[0]) == "openadapt-agent":
		args = words[1:]
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && path.Base(words[2]) == "openadapt-agent":
		args = words[3:]
	default:
		// A host's registration command that starts the server after "--",
		// e.g. `claude mcp add … -- openadapt-agent serve …`.
		i := slices.Index(words, "--")
		if i < 0 || i+1 >= len(words) || path.Base(words[i+1]) != "openadapt-agent" {
			return nil, false
		}
		args = words[i+2:]
	}
	for i, w := range args {
		if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "&>") {
			return args[:i], true
		}
	}
	return args, true
}

// splitShell splits a shell line into commands at &&, ||, ; and |.
func splitShell(words []string) [][]string {
	var out [][]string
	var cur []string
	for _, w := range words {
		switch w {
		case "&&", "||", ";", "|":
			out = append(out, cur)
			cur = nil
		default:
			cur = append(cur, w)
		}
	}
	return append(out, cur)
}

// readmeInvocations extracts every openadapt-agent command from the shell
// code blocks of README.md. Comment lines (output samples) are skipped.
func readmeInvocations(t *testing.T, readme []byte) []readmeInvocation {
	t.Helper()
	var out []readmeInvocation
	sc := bufio.NewScanner(bytes.NewReader(readme))
	inBlock, shell := false, false
	n := 0
	pending, pendingLine := "", 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			shell = inBlock && shellBlock(strings.TrimPrefix(line, "```"))
			continue
		}
		if !inBlock || !shell {
			continue
		}
		if pending != "" {
			line = pending + " " + line
		} else {
			pendingLine = n
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		pending = ""
		if line == "" || strings.HasPrefix(line, "#") || !strings.Contains(line, "openadapt-agent") {
			continue
		}
		words, err := flowrun.SplitCommand(line)
		if err != nil {
			t.Errorf("README.md:%d: cannot split %q: %v", pendingLine, line, err)
			continue
		}
		// A word starting with # begins a shell comment.
		for i, w := range words {
			if strings.HasPrefix(w, "#") {
				words = words[:i]
				break
			}
		}
		for _, cmd := range splitShell(words) {
			if args, ok := agentArgs(cmd); ok {
				out = append(out, readmeInvocation{line: pendingLine, text: strings.Join(args, " "), args: args})
			}
		}
	}
	return out
}

// scriptLine matches the commands of a testscript that run the binary.
var scriptLine = regexp.MustCompile(`^(?:!\s+)?(?:exec|exits\s+\d+)\s+openadapt-agent(?:-inproc)?(?:\s+(.*))?$|^(?:!\s+)?openadapt-agent-inproc(?:\s+(.*))?$`)

// scriptInvocations returns the argument lists of every openadapt-agent run
// in testdata/script/*.txtar (the script part, before any archive file).
func scriptInvocations(t *testing.T) [][]string {
	t.Helper()
	files, err := filepath.Glob("../testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	var out [][]string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --") {
				break // the archive part
			}
			m := scriptLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			rest := m[1] + m[2]
			// testscript quotes with single quotes only, like the shell.
			words, err := flowrun.SplitCommand(rest)
			if err != nil && strings.TrimSpace(rest) != "" {
				continue
			}
			out = append(out, words)
		}
	}
	return out
}

// commandShape describes an invocation by what it exercises: the command
// path, the set of flag names, and the positional arguments, where paths and
// variables are wildcards (the README shows placeholders, scripts use their
// own folders) and plain words (shell names, subcommand-like values) must
// match.
func commandShape(args []string) (string, bool) {
	root := newRootCmd(&IO{In: eofReader{}, Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	c, rest, err := root.Find(args)
	if err != nil {
		return "", false
	}
	flags := c.Flags()
	flags.AddFlagSet(c.InheritedFlags())
	var names, pos []string
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w == "--" {
			for _, p := range rest[i+1:] {
				pos = append(pos, positionalShape(p))
			}
			break
		}
		if len(w) > 1 && strings.HasPrefix(w, "-") {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			var f *pflag.Flag
			if strings.HasPrefix(w, "--") {
				f = flags.Lookup(name)
			} else if len(name) == 1 {
				f = flags.ShorthandLookup(name)
			}
			if f == nil {
				names = append(names, "?"+name)
				continue
			}
			names = append(names, f.Name)
			if !hasValue && f.NoOptDefVal == "" {
				i++ // the value
			}
			continue
		}
		pos = append(pos, positionalShape(w))
	}
	slices.Sort(names)
	names = slices.Compact(names)
	return c.CommandPath() + " [" + strings.Join(names, " ") + "] (" + strings.Join(pos, " ") + ")", true
}

func positionalShape(w string) string {
	if strings.ContainsAny(w, "/.$~") {
		return "PATH"
	}
	return w
}

// TestREADMECommandsAreTested fails when README.md shows an openadapt-agent
// command that no test runs: every command line in a shell code block must
// have the shape (command, flags, positionals) of an `exec openadapt-agent …`
// line in testdata/script, or be listed in readmeCoveredElsewhere with the
// name of an existing Go test that runs it.
func TestREADMECommandsAreTested(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	invs := readmeInvocations(t, readme)
	if len(invs) == 0 {
		t.Fatal("no openadapt-agent commands found in README.md")
	}
	scripted := map[string]bool{}
	for _, args := range scriptInvocations(t) {
		if s, ok := commandShape(args); ok {
			scripted[s] = true
		}
	}
	tests := goTestNames(t)
	seenAllow := map[string]bool{}
	for _, inv := range invs {
		shape, ok := commandShape(inv.args)
		if !ok {
			t.Errorf("README.md:%d: `openadapt-agent %s` is not a command of this binary", inv.line, inv.text)
			continue
		}
		if name, ok := readmeCoveredElsewhere[inv.text]; ok {
			seenAllow[inv.text] = true
			if !tests[name] {
				t.Errorf("README.md:%d: `openadapt-agent %s` is allowlisted as run by %s, which does not exist", inv.line, inv.text, name)
			}
			continue
		}
		if !scripted[shape] {
			t.Errorf("README.md:%d: `openadapt-agent %s` (%s) is run by no testscript; add one, or list the Go test that runs it in readmeCoveredElsewhere", inv.line, inv.text, shape)
		}
	}
	for text := range readmeCoveredElsewhere {
		if !seenAllow[text] {
			t.Errorf("readmeCoveredElsewhere lists `%s`, which README.md no longer shows", text)
		}
	}
}

// goTestNames returns the names of every Test function in the module.
func goTestNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && p != ".." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			names[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestREADMEExtraction pins the extraction rules on a small document.
func TestREADMEExtraction(t *testing.T) {
	t.Parallel()
	doc := "x `openadapt-agent serve` in prose is not a command\n" +
		"```sh\n" +
		"go run ./cmd/openadapt-agent ledger verify # a comment\n" +
		"# openadapt-agent output sample\n" +
		"OPENADAPT_BUNDLE_KEY=k ./openadapt-agent bundle verify --json a/b\n" +
		"cd p && ../openadapt-agent skill install x.skill --agent codex\n" +
		"openadapt-agent completion bash > /etc/x\n" +
		"claude mcp add n -- openadapt-agent serve \\\n  --bundles /b\n" +
		"go build -o openadapt-agent ./cmd/openadapt-agent\n" +
		"```\n" +
		"```toml\n" +
		"command = \"openadapt-agent\"\n" +
		"```\n"
	var got []string
	for _, inv := range readmeInvocations(t, []byte(doc)) {
		got = append(got, inv.text)
	}
	want := []string{
		"ledger verify",
		"bundle verify --json a/b",
		"skill install x.skill --agent codex",
		"completion bash",
		"serve --bundles /b",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	s1, _ := commandShape([]string{"doctor", "--bundles", "/x", "--json"})
	s2, _ := commandShape([]string{"doctor", "--json", "--bundles=$WORK/y"})
	s3, _ := commandShape([]string{"doctor", "--json"})
	if s1 != s2 || s1 == s3 {
		t.Errorf("shapes: %q %q %q", s1, s2, s3)
	}
}

// repoDocs returns README.md and every Markdown file under docs/ (the
// generated docs/cli pages included), as paths relative to this package.
func repoDocs(t *testing.T) []string {
	t.Helper()
	files := []string{"../README.md"}
	err := filepath.WalkDir("../docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// withoutFences blanks the fenced code blocks of a Markdown document,
// keeping its line count.
func withoutFences(doc string) string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

var (
	mdLink    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*$`)
)

// headingAnchors returns the anchors GitHub gives the headings of doc:
// lower case, punctuation other than - and _ dropped, spaces as -.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(withoutFences(doc), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDocLinksResolve fails when README.md or a note under docs/ links to
// anything but a file of this repository, or to a file or heading that does
// not exist: a reader of a clone must be able to follow every link.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	for _, f := range repoDocs(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc := withoutFences(string(b))
		for _, m := range mdLink.FindAllStringSubmatchIndex(doc, -1) {
			target := doc[m[2]:m[3]]
			line := 1 + strings.Count(doc[:m[0]], "\n")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				t.Errorf("%s:%d: link to %s leaves the repository; link a file of this repository instead", f, line, target)
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := f
			if file != "" {
				dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link target %s does not exist", f, line, file)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s:%d: anchor #%s on a file that is not Markdown", f, line, anchor)
				continue
			}
			db, err := os.ReadFile(dest)
			if err != nil {
				t.Fatal(err)
			}
			if !headingAnchors(string(db))[anchor] {
				t.Errorf("%s:%d: %s has no heading for #%s", f, line, dest, anchor)
			}
		}
	}
}

// outsideCitation matches references to documents that are not in this
// repository: the team's specs and decision records, their section signs,
// and issue numbers.
var outsideCitation = regexp.MustCompile(`§|shared/spec|\.\./shared|round[23]-decisions|\b[Ii]ssue [0-9]|\bspec/[a-z-]+\.md`)

// TestDocsCiteNothingOutside fails when README.md or a note under docs/
// cites a document a reader of a clone cannot open. Notes state the rule or
// cite another note.
func TestDocsCiteNothingOutside(t *testing.T) {
	t.Parallel()
	for _, f := range repoDocs(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if m := outsideCitation.FindString(l); m != "" {
				t.Errorf("%s:%d: %q cites a document outside the repository: %s", f, i+1, m, strings.TrimSpace(l))
			}
		}
	}
}

// TestREADMEPathsExist fails when README.md names, in inline code, a path of
// this repository that does not exist (a folder or file under a top-level
// entry, or a top-level file).
func TestREADMEPathsExist(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for _, e := range ents {
		top[e.Name()] = true
	}
	pathLike := regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$`)
	code := regexp.MustCompile("`([^`\n]+)`")
	doc := withoutFences(string(b))
	for _, m := range code.FindAllStringSubmatchIndex(doc, -1) {
		p := doc[m[2]:m[3]]
		first, _, nested := strings.Cut(p, "/")
		if !pathLike.MatchString(p) || !top[first] || (!nested && !strings.Contains(p, ".")) || strings.HasPrefix(p, ".git") {
			continue
		}
		if _, err := os.Stat(filepath.Join("..", filepath.FromSlash(p))); err != nil {
			t.Errorf("README.md:%d: `%s` does not exist in the repository", 1+strings.Count(doc[:m[0]], "\n"), p)
		}
	}
}
