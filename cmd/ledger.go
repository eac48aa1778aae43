package cmd

import "github.com/spf13/cobra"

// newLedgerCmd is the `ledger` command group. Subcommands live in one file each
// (cmd/ledger_<sub>.go) and are added here.
func newLedgerCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:   "ledger",
		Short: "Verify OpenAdapt's signed admission ledgers offline",
		Example: `  openadapt-agent ledger verify
  openadapt-agent ledger admission --bundle ./bundles/invoice-entry`,
	}
	c.AddCommand(
		newLedgerVerifyCmd(io),
		newLedgerAdmissionCmd(io),
	)
	return c
}
