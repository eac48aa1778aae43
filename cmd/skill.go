package cmd

import "github.com/spf13/cobra"

// newSkillCmd is the `skill` command group. Subcommands live in one file each
// (cmd/skill_<sub>.go) and are added here.
func newSkillCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "skill",
		Short: "Emit, validate, pack, verify and install Agent Skills",
	}
	_ = io
	return c
}
