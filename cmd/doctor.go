package cmd

import (
	"errors"

	"github.com/spf13/cobra"
)

// newDoctorCmd is `doctor`, which checks the local setup.
func newDoctorCmd(io *IO) *cobra.Command {
	_ = io
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the local setup and say how to fix each problem",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("doctor is not available in this build yet")
		},
	}
}
