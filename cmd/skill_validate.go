package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillValidationMediaType identifies the `skill validate --json` document.
const skillValidationMediaType = "application/vnd.openadapt-agent.skill-validation+json;version=1"

func newSkillValidateCmd(io *IO) *cobra.Command {
	var strict, asJSON bool
	c := &cobra.Command{
		Use:   "validate PATH",
		Short: "Check a skill folder (or its SKILL.md) against the Agent Skills rules",
		Long: `Check a skill folder, or its SKILL.md, against the Agent Skills rules (name,
description, allowed keys, YAML safety, BOM, body size). Each finding is one
line naming the field and the rule id. Exit 0 valid; 1 invalid, or PATH is
missing or unreadable; 2 usage. --strict counts warnings as errors.`,
		Example: `  openadapt-agent skill validate ./skills/invoice-entry
  openadapt-agent skill validate --strict --json ./skills/invoice-entry/SKILL.md`,
		Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			path := args[0]
			if err := operandError(path, true, true); err != nil {
				return fmt.Errorf("skill validate: %w", err)
			}
			rep, err := skill.Validate(path)
			if err != nil {
				return fmt.Errorf("skill validate: %w", err)
			}
			valid := rep.Valid(strict)
			if asJSON {
				if err := writeJSON(io.Out, struct {
					MediaType string          `json:"mediaType"`
					Path      string          `json:"path"`
					Name      string          `json:"name"`
					Valid     bool            `json:"valid"`
					Findings  []skill.Finding `json:"findings"`
				}{skillValidationMediaType, path, rep.Name, valid, rep.Findings}); err != nil {
					return err
				}
			} else {
				for _, f := range rep.Findings {
					fmt.Fprintf(io.Out, "%s: %s: %s [%s]\n", path, f.Severity, oneLine(f.Message), f.ID)
				}
				if valid {
					fmt.Fprintf(io.Out, "valid: %s\n", path)
				} else {
					e, w := rep.Count()
					fmt.Fprintf(io.Out, "invalid: %s (%d errors, %d warnings)\n", path, e, w)
				}
			}
			if !valid {
				return errCheckFailed
			}
			return nil
		},
	}
	c.Flags().BoolVar(&strict, "strict", false, "count warnings as errors")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}
