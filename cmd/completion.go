package cmd

import "github.com/spf13/cobra"

// addCompletionCmd adds cobra's `completion bash|zsh|fish|powershell` command
// to root, visible so that it appears in help and in docs/cli. Cobra would add
// it lazily at Execute; adding it here makes the docs generator see the same
// tree a user sees. Argument mistakes become usage errors (exit 2) like
// everywhere else. Call it after every other command is added.
func addCompletionCmd(root *cobra.Command) {
	root.CompletionOptions.HiddenDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = `  openadapt-agent completion bash > /etc/bash_completion.d/openadapt-agent
  openadapt-agent completion zsh > "${fpath[1]}/_openadapt-agent"
  openadapt-agent completion fish > ~/.config/fish/completions/openadapt-agent.fish
  openadapt-agent completion powershell | Out-String | Invoke-Expression`
		for _, shell := range c.Commands() {
			shell.Args = noArgs()
		}
	}
}
