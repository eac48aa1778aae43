package cmd

import "github.com/spf13/cobra"

// newReleaseCmd is the `release` command group: checks of openadapt-agent's
// own release files (docs/release.md). Subcommands live in one file each
// (cmd/release_<sub>.go).
func newReleaseCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "release",
		Short: "Verify a downloaded openadapt-agent release offline",
		Example: `  openadapt-agent release verify checksums.txt --bundle checksums.txt.sigstore.json \
      --key openadapt-agent-release.pub --insecure-ignore-tlog`,
	}
	c.AddCommand(newReleaseVerifyCmd(io))
	return c
}
