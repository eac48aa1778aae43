package cmd

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func runForTest(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		hint string
	}{
		{[]string{"sevre"}, "did you mean 'openadapt-agent serve'?"},
		{[]string{"ledger", "verfy"}, "did you mean 'openadapt-agent ledger verify'?"},
		{[]string{"skill", "instal"}, "did you mean 'openadapt-agent skill install'?"},
		{[]string{"bundle", "inspekt"}, "did you mean 'openadapt-agent bundle inspect'?"},
		{[]string{"zzzzzz"}, "run 'openadapt-agent --help' for the commands"},
	} {
		code, out, errs := runForTest(t, tc.args...)
		if code != exitUsage || out != "" {
			t.Errorf("%v: exit %d stdout %q, want 2 and nothing", tc.args, code, out)
		}
		if !strings.Contains(errs, "openadapt-agent: error: unknown command ") || !strings.Contains(errs, "openadapt-agent: hint: "+tc.hint+"\n") {
			t.Errorf("%v: stderr %q, want the hint %q", tc.args, errs, tc.hint)
		}
	}
}

func TestFlagValueCompletion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "ledger", "admission", "--profile", ""}, []string{"demo", "standard", "regulated"}},
		{[]string{"__complete", "ledger", "verify", "--require-active", ""}, []string{"agent", "capture", "openadapt"}},
		{[]string{"__complete", "skill", "install", "x", "--agent", ""}, []string{"claude-code", "codex", "cursor"}},
		{[]string{"__complete", "skill", "install", "x", "--agent", "codex,"}, []string{"codex,claude-code"}},
		{[]string{"__complete", "serve", "--tool-mode", ""}, []string{"per-workflow", "catalog"}},
	} {
		code, out, _ := runForTest(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", tc.args, code)
		}
		lines := strings.Split(out, "\n")
		for _, w := range tc.want {
			found := false
			for _, l := range lines {
				if l == w {
					found = true
				}
			}
			if !found {
				t.Errorf("%v: completion %q lacks %q", tc.args, out, w)
			}
		}
	}
	// Every fixed-value flag in the tree has a completion function.
	root := newRootCmd(&IO{In: eofReader{}, Out: io.Discard, Err: io.Discard})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name := range flagValues() {
			if c.Flags().Lookup(name) == nil {
				continue
			}
			if _, ok := c.GetFlagCompletionFunc(name); !ok {
				t.Errorf("%s --%s has no value completion", c.CommandPath(), name)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// TestHelpExamples: every command a user can run shows examples in its help,
// and every command that reads sealed bundles documents OPENADAPT_BUNDLE_KEY.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	root := newRootCmd(&IO{In: eofReader{}, Out: io.Discard, Err: io.Discard})
	readsSealed := map[string]bool{
		"bundle verify": true, "bundle inspect": true, "ledger admission": true,
		"skill emit": true, "doctor": true, "serve": true,
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		name := commandName(c)
		if !c.Hidden && c.Parent() != nil && c.Parent().Name() != "completion" && c.Name() != "help" && c.Name() != "__complete" {
			if strings.TrimSpace(c.Example) == "" {
				t.Errorf("%q has no examples in its help", c.CommandPath())
			}
		}
		if readsSealed[name] && !strings.Contains(c.Long, "OPENADAPT_BUNDLE_KEY") {
			t.Errorf("%q reads sealed bundles but its help does not mention OPENADAPT_BUNDLE_KEY", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

func TestAtAcceptsDate(t *testing.T) {
	t.Parallel()
	got, err := parseAt("2026-11-30")
	if err != nil || got.Format("2006-01-02T15:04:05Z07:00") != "2026-11-30T00:00:00Z" {
		t.Fatalf("parseAt(date) = %v, %v", got, err)
	}
	got, err = parseAt("2026-11-30T01:00:00+01:00")
	if err != nil || !got.Equal(got.UTC()) || got.UTC().Hour() != 0 {
		t.Fatalf("parseAt(rfc3339) = %v, %v", got, err)
	}
	for _, bad := range []string{"yesterday", "2026-13-01", "2026-11-30 00:00", ""} {
		if _, err := parseAt(bad); err == nil || exitCode(err) != exitUsage {
			t.Errorf("parseAt(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestMissingKeyHint(t *testing.T) {
	t.Setenv("OPENADAPT_BUNDLE_KEY", "")
	code, out, errs := runForTest(t, "bundle", "verify", "../testdata/flow/sealed/mockmed-triage-v3")
	if code != exitFailed || !strings.Contains(out, " missing_key ") {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	if want := "openadapt-agent: hint: " + missingKeyHint + "\n"; !strings.Contains(errs, want) {
		t.Fatalf("stderr %q lacks the hint", errs)
	}
	_, _, errs = runForTest(t, "bundle", "verify", "../testdata/flow/plain/encounter-loop")
	if strings.Contains(errs, "OPENADAPT_BUNDLE_KEY") {
		t.Fatalf("a plaintext bundle printed the key hint: %q", errs)
	}
	_, _, errs = runForTest(t, "skill", "emit", "../testdata/flow/sealed/mockmed-triage-v3", "--out", t.TempDir())
	if !strings.Contains(errs, "missing_key") || !strings.Contains(errs, "hint: "+missingKeyHint) {
		t.Fatalf("skill emit stderr %q lacks the hint", errs)
	}
}
