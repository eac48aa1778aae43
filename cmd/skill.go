package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// newSkillCmd is the `skill` command group. Subcommands live in one file each
// (cmd/skill_<sub>.go) and are added here.
func newSkillCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "skill",
		Short: "Emit, validate, pack, verify, install, list and remove Agent Skills",
		Example: `  openadapt-agent skill emit --from-flow-skill ./flow-out/invoice-entry --out ./skills
  openadapt-agent skill pack ./skills/invoice-entry -o invoice-entry.skill
  openadapt-agent skill install invoice-entry.skill -a claude-code
  openadapt-agent skill list
  openadapt-agent skill remove invoice-entry -y`,
	}
	c.AddCommand(
		newSkillValidateCmd(io),
		newSkillPackCmd(io),
		newSkillEmitCmd(io),
		newSkillVerifyCmd(io),
		newSkillInstallCmd(io),
		newSkillListCmd(io),
		newSkillRemoveCmd(io),
	)
	return c
}

// warnf prints one warning line on stderr.
func warnf(w io.Writer, format string, a ...any) {
	fmt.Fprintf(w, "openadapt-agent: warning: %s\n", oneLine(fmt.Sprintf(format, a...)))
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
