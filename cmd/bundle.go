package cmd

import "github.com/spf13/cobra"

// newBundleCmd is the `bundle` command group. Subcommands live in one file each
// (cmd/bundle_<sub>.go) and are added here.
func newBundleCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "bundle",
		Short: "Read and verify openadapt-flow bundles exactly as Flow does",
		Example: `  openadapt-agent bundle verify ./bundles
  openadapt-agent bundle inspect --json ./bundles/invoice-entry`,
	}
	c.AddCommand(
		newBundleVerifyCmd(io),
		newBundleInspectCmd(io),
	)
	return c
}
