package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
)

// versionMediaType identifies the `version --json` document.
const versionMediaType = "application/vnd.openadapt-agent.version+json;version=1"

func newVersionCmd(io *IO) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version of openadapt-agent",
		Long: `Print the version of openadapt-agent. With --json: the version, the Go
toolchain, the platform and, when the build recorded them, the VCS revision,
commit time and whether the tree was modified.`,
		Example: `  openadapt-agent version
  openadapt-agent version --json`,
		Args: noArgs(),
		RunE: func(*cobra.Command, []string) error {
			if !asJSON {
				_, err := fmt.Fprintf(io.Out, "openadapt-agent %s\n", buildinfo.Version())
				return err
			}
			// vcs is null when the build recorded no VCS stamp (go run
			// with -buildvcs=false, go test, a source tarball).
			doc := struct {
				MediaType string             `json:"mediaType"`
				Version   string             `json:"version"`
				Go        string             `json:"go"`
				Platform  string             `json:"platform"`
				VCS       *buildinfo.VCSInfo `json:"vcs"`
			}{versionMediaType, buildinfo.Version(), buildinfo.GoVersion(), runtime.GOOS + "/" + runtime.GOARCH, buildinfo.VCS()}
			enc := json.NewEncoder(io.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(doc)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	return c
}
