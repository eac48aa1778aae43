package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// Progress appears only when stderr is a terminal and the tree is large.
const (
	progressMinBytes = 32 << 20
	progressMinFiles = 1000
)

func newSkillPackCmd(io *IO) *cobra.Command {
	var out string
	var asJSON bool
	c := &cobra.Command{
		Use:   "pack DIR -o FILE",
		Short: "Write a reproducible archive of a skill folder",
		Long: `Write a reproducible archive of a valid skill folder. FILE's suffix picks the
format: .skill or .zip (the shape Claude accepts for upload; use it for
anything an agent installs) or .tar.zst/.tzst (zstd, for transport). Entries
sit under one top folder <name>/, sorted, with fixed times, zero owners and
0644/0755 modes; a SHA256SUMS manifest is added. Symlinks and special files
are refused. Prints the archive's sha256 and the tree digest, and writes
FILE.sha256 next to FILE.`,
		Example: `  openadapt-agent skill pack ./skills/invoice-entry -o invoice-entry.skill
  openadapt-agent skill pack ./skills/invoice-entry -o invoice-entry.tar.zst --json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if out == "" {
				return usageErrorf("skill pack: -o FILE is required")
			}
			format, err := skill.FormatFor(out)
			if err != nil {
				return usageErrorf("skill pack: %s: %w", out, err)
			}
			if err := operandError(dir, true, false); err != nil {
				return fmt.Errorf("skill pack: %w", err)
			}
			// open: a progress line is on stderr without its final newline.
			var open bool
			endLine := func() {
				if open {
					fmt.Fprintln(io.Err)
					open = false
				}
			}
			opt := skill.PackOptions{
				Format:  format,
				Context: cmd.Context(), // SIGINT/SIGTERM: stop, leave no temporary file
				Warn: func(msg string) {
					endLine()
					warnf(io.Err, "skill pack: %s", msg)
				},
			}
			if io.ErrTTY {
				var last time.Time
				opt.Progress = func(files, totalFiles int, n, total int64) {
					if total < progressMinBytes && totalFiles < progressMinFiles {
						return
					}
					if files < totalFiles && time.Since(last) < 100*time.Millisecond {
						return
					}
					last, open = time.Now(), true
					fmt.Fprintf(io.Err, "\rpacking: %d/%d files, %d/%d MiB", files, totalFiles, n>>20, total>>20)
				}
			}
			res, err := skill.PackFile(dir, out, opt)
			endLine()
			if err != nil {
				return fmt.Errorf("skill pack: %w", err)
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType  string `json:"mediaType"`
					Archive    string `json:"archive"`
					Format     string `json:"format"`
					SHA256     string `json:"sha256"`
					TreeDigest string `json:"tree_digest"`
					Files      int    `json:"files"`
					Bytes      int64  `json:"bytes"`
				}{skillPackMediaType, out, string(res.Format), "sha256:" + res.SHA256, res.TreeDigest, res.Files, res.Bytes})
			}
			fmt.Fprintf(io.Out, "sha256:%s  %s\n%s  %s/\n", res.SHA256, out, res.TreeDigest, res.Name)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "archive to write (.skill, .zip, .tar.zst or .tzst)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}

// skillPackMediaType identifies the `skill pack --json` document.
const skillPackMediaType = "application/vnd.openadapt-agent.skill-pack+json;version=1"
