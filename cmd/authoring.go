package cmd

import "github.com/spf13/cobra"

// newAuthoringCmd is `authoring`, the group of authoring commands.
func newAuthoringCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:     "authoring",
		Short:   "Teach a new workflow with a hosted chat app's help",
		Example: `  openadapt-agent authoring connect 'openadapt://runner?pack=…&bind=…&origin=https://openadapt.ai'`,
		Long: `authoring groups the commands that let a person teach a new workflow with an
agent's help. Local agents (Claude Code, Codex) use serve --authoring over
stdio; hosted chat apps (ChatGPT, Claude in the browser), which cannot reach
this computer, use authoring connect: an outbound-only mailbox client.`,
	}
	c.AddCommand(newAuthoringConnectCmd(io))
	return c
}
