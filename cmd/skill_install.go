package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillInstallMediaType identifies the `skill install --json` document.
const skillInstallMediaType = "application/vnd.openadapt-agent.skill-install+json;version=1"

func newSkillInstallCmd(io *IO) *cobra.Command {
	var (
		agentIDs                        []string
		sf                              scopeFlags
		copyTree, force, noLock, asJSON bool
		sha                             string
		sig                             sigFlags
	)
	c := &cobra.Command{
		Use:   "install SRC --agent ID[,ID...] [--project|--global]",
		Short: "Install a skill folder or packed skill for one or more agents",
		Long: `Install a skill (a folder, or a .skill/.zip/.tar.zst archive that first passes
every check of "skill verify") for the given agents. The real copy lives in
.agents/skills/<name> under the project root (the nearest folder holding .git)
or, with --global, the home directory; agents that read elsewhere get a
relative per-skill symlink (for example .claude/skills/<name>), or a copy with
--copy or where symlinks fail. The skills lock file is updated, keeping every
other entry; a lock file of another version is left untouched.

A different skill already installed under the same name is refused unless
--force. Every install prints a data-boundary warning: the skill holds the
compiled bundle and is protected workflow data.`,
		Example: `  openadapt-agent skill install ./out/mockmed-triage --agent claude-code,codex
  openadapt-agent skill install mockmed-triage.skill -a claude-code -g`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			src := args[0]
			scope, err := sf.scope("skill install")
			if err != nil {
				return err
			}
			so, err := sig.options()
			if err != nil {
				return fmt.Errorf("skill install: %w", err)
			}
			if err := skill.CheckInstallRequest(src, agentIDs, scope); err != nil {
				return usageErrorf("skill install: %w", err)
			}
			if err := operandError(src, true, true); err != nil {
				return fmt.Errorf("skill install: %w", err)
			}
			fi, statErr := os.Stat(src)
			if statErr == nil && fi.IsDir() && (sig.set() || sha != "") {
				return usageErrorf("skill install: --bundle and --sha256 apply to an archive source")
			}
			warnf(io.Err, "%s", skill.DataBoundaryWarning)
			vo := skill.VerifyOptions{SHA256: sha}
			if sig.set() && statErr == nil {
				data, err := fsutil.ReadFile(cmd.Context(), src, fsutil.Archive)
				if err != nil {
					return withCode(codeOperandUnreadable, fmt.Errorf("skill install: %w", err))
				}
				if _, err := ledger.VerifyArtifact(cmd.Context(), ledger.ArtifactBytes(data), so); err != nil {
					return fmt.Errorf("skill install: signature: %w", sigstoreError(err))
				}
				// Install exactly the bytes whose signature was checked.
				if vo.SHA256 == "" {
					d := sha256.Sum256(data)
					vo.SHA256 = hex.EncodeToString(d[:])
				}
			}
			res, err := skill.Install(skill.InstallOptions{
				Source: src, Agents: agentIDs, Scope: scope, Copy: copyTree, Force: force, NoLock: noLock,
				Verify: vo, Context: cmd.Context(), Warn: func(msg string) { warnf(io.Err, "skill install: %s", msg) },
			})
			if err != nil {
				err = fmt.Errorf("skill install: %w", err)
				if errors.Is(err, skill.ErrUsage) || errors.Is(err, skill.ErrOption) {
					return usageError(err)
				}
				return err
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType string `json:"mediaType"`
					*skill.InstallResult
				}{skillInstallMediaType, res})
			}
			fmt.Fprintf(io.Out, "%s %s\n", res.CanonicalKind, res.Canonical)
			for _, l := range res.Links {
				fmt.Fprintf(io.Out, "%s %s\n", l.Kind, l.Path)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringSliceVarP(&agentIDs, "agent", "a", nil, "agent ids, comma-separated (claude-code, codex, cursor, github-copilot, gemini-cli, opencode, amp, cline, codex-legacy, goose, windsurf)")
	sf.bind(c, "install")
	f.BoolVar(&copyTree, "copy", false, "make real copies instead of symlinks")
	f.BoolVar(&force, "force", false, "replace a different skill with the same name")
	f.BoolVar(&noLock, "no-lock", false, "do not update the skills lock file")
	f.StringVar(&sha, "sha256", "", "expected archive sha256 (archive sources)")
	sig.bind(f, "detached Sigstore bundle over the archive (archive sources)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}
