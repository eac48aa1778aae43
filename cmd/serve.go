package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newServeCmd is `serve`, the governed local stdio MCP server.
func newServeCmd(io *IO) *cobra.Command {
	_ = io
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the governed local stdio MCP server",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("serve is not available in this build yet")
		},
	}
}
