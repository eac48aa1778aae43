package cmd

import "github.com/spf13/cobra"

// exactArgs is cobra.ExactArgs whose failure is a usage error (exit 2).
func exactArgs(n int) cobra.PositionalArgs { return asUsage(cobra.ExactArgs(n)) }

// minArgs is cobra.MinimumNArgs whose failure is a usage error (exit 2).
func minArgs(n int) cobra.PositionalArgs { return asUsage(cobra.MinimumNArgs(n)) }

// rangeArgs is cobra.RangeArgs whose failure is a usage error (exit 2).
func rangeArgs(lo, hi int) cobra.PositionalArgs { return asUsage(cobra.RangeArgs(lo, hi)) }

// noArgs is cobra.NoArgs whose failure is a usage error (exit 2).
func noArgs() cobra.PositionalArgs { return asUsage(cobra.NoArgs) }

func asUsage(f cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		return usageError(f(c, args))
	}
}
