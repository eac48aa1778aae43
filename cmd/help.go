package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// missingKeyHint is printed whenever a sealed bundle failed with
// missing_key: the error kind alone does not say what to do.
const missingKeyHint = "set OPENADAPT_BUNDLE_KEY to the passphrase the bundle was sealed with (export it in this shell, or in the env block of the MCP client that starts serve)"

// hintMissingKey prints [missingKeyHint] once when any bundle failed with
// missing_key.
func hintMissingKey(w io.Writer, bs []*bundle.Bundle) {
	for _, b := range bs {
		if b.ErrorKind == bundle.KindMissingKey {
			fmt.Fprintf(w, "openadapt-agent: hint: %s\n", missingKeyHint)
			return
		}
	}
}

// hintDeeper prints, for each operand that is a folder holding no bundle
// (not_a_bundle for the operand itself), that discovery looks one level
// down only, and names up to three bundle folders found one level further
// down, whose parent would have been the operand to give.
func hintDeeper(w io.Writer, operands []string, bs []*bundle.Bundle) {
	for _, b := range bs {
		if b.ErrorKind != bundle.KindNotABundle || !slices.Contains(operands, b.Dir) {
			continue
		}
		if fi, err := os.Lstat(b.Dir); err != nil || !fi.IsDir() {
			continue
		}
		deeper := bundle.Deeper(b.Dir, 3)
		if len(deeper) == 0 {
			fmt.Fprintf(w, "openadapt-agent: hint: %s: discovery looks for workflow.json or workflow.json.enc in the folder itself and in its immediate subfolders only\n", displayPath(b.Dir))
			continue
		}
		shown := make([]string, len(deeper))
		for i, d := range deeper {
			shown[i] = displayPath(d)
		}
		fmt.Fprintf(w, "openadapt-agent: hint: %s: discovery looks one level down only; bundles are further down (%s): pass their parent folder, e.g. %s\n",
			displayPath(b.Dir), strings.Join(shown, ", "), displayPath(filepath.Dir(deeper[0])))
	}
}

// unknownSubcommand is the Args check of a command group: an operand is an
// unknown command (a usage error) with a did-you-mean hint when a
// subcommand is close (gh, git).
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := usageErrorf("unknown command %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return withHint(err, "did you mean "+quoteJoin(s, c.CommandPath())+"?")
	}
	return withHint(err, fmt.Sprintf("run '%s --help' for the commands", c.CommandPath()))
}

func quoteJoin(names []string, prefix string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + prefix + " " + n + "'"
	}
	return strings.Join(q, " or ")
}

// flagValues lists the fixed values of every fixed-value flag, by flag name,
// for shell completion. A flag of that name anywhere in the tree completes
// from its list.
func flagValues() map[string][]string {
	return map[string][]string{
		"agent":          skill.AgentIDs(),
		"profile":        {ledger.ProfileDemo, ledger.ProfileStandard, ledger.ProfileRegulated},
		"require-active": ledger.TargetNames(),
		"tool-mode":      {"per-workflow", "catalog"},
		"audit-log":      {"off"},
	}
}

// fileExtensions lists, by flag name, the file suffixes a file flag takes.
var fileExtensions = map[string][]string{
	"output":         {"skill", "zip", "tar.zst", "tzst"},
	"labels":         {"json"},
	"labels-starter": {"json"},
}

// registerCompletions registers value completion for every fixed-value flag
// and file-suffix completion for file flags, on every command of the tree.
func registerCompletions(root *cobra.Command) {
	values := flagValues()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for name, vs := range values {
			if c.Flags().Lookup(name) == nil {
				continue
			}
			vs := vs
			_ = c.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
				// Comma-separated lists (--agent a,b): complete the last item.
				head := ""
				if i := strings.LastIndexByte(prefix, ','); i >= 0 {
					head = prefix[:i+1]
				}
				out := make([]string, 0, len(vs))
				for _, v := range vs {
					out = append(out, head+v)
				}
				d := cobra.ShellCompDirectiveNoFileComp
				if head != "" {
					d |= cobra.ShellCompDirectiveNoSpace
				}
				return out, d
			})
		}
		for name, exts := range fileExtensions {
			if c.Flags().Lookup(name) != nil {
				_ = c.MarkFlagFilename(name, exts...)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
