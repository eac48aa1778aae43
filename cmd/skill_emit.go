package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillEmitMediaType identifies the `skill emit --json` document.
const skillEmitMediaType = "application/vnd.openadapt-agent.skill-emit+json;version=1"

// newEmitSkillAliasCmd is the hidden top-level `emit-skill BUNDLE --out DIR`,
// kept for parity with the Python package; it is `skill emit`.
func newEmitSkillAliasCmd(io *IO) *cobra.Command {
	c := newSkillEmitCmd(io)
	c.Use = "emit-skill BUNDLE --out DIR"
	c.Hidden = true
	return c
}

func newSkillEmitCmd(io *IO) *cobra.Command {
	var (
		out, fromFlowSkill, flowCLI, labelsStarter   string
		flowTimeout                                  time.Duration
		allowLegacy, allowUnavailable, force, asJSON bool
		showFlowOutput, cardStarter                  bool
	)
	c := &cobra.Command{
		Use:   "emit (BUNDLE | --from-flow-skill SKILLDIR) --out DIR",
		Short: "Wrap a Flow skill folder with openadapt-agent invocation and halt guidance",
		Long: `Wrap the skill folder Flow emits (SKILL.md + bundle/) into an Agent Skill at
DIR/<name>: the bundle inside is verified first (tampered, undecryptable and
legacy-unverified bundles are refused; --allow-legacy accepts the last), the
frontmatter is rewritten as safe YAML with openadapt-* metadata, Flow's body is
kept byte for byte, and guidance for the governed MCP path is appended.

With BUNDLE, Flow's own "emit-skill" runs first (--flow-cli, default
openadapt-flow on PATH). With --from-flow-skill, no Flow is needed.
The write is atomic; emitting again over our own output replaces it.

What Flow prints may hold protected data, so it stays on this computer:
each run keeps it in <state>/flow-output/skill-emit.log (0600, the last
64 KiB, replaced by the next run), and a failure names that file.
--show-flow-output also prints the end of Flow's stderr on a failure.

--labels-starter FILE also writes a starter for "serve --labels": a JSON file
with this workflow's opaque id and an empty label and description, for the
operator to fill in (bundle data never fills it). An existing FILE is refused
unless --force.

--card-starter also writes bundle/openadapt-card.json into the skill, a starter
workflow card for "serve": an empty name, purpose and done_means, and an empty
description per input (keyed by Flow's own parameter names). serve ignores it, with a warning naming the empty field,
until every text is written (or its field removed). A bundle that already has
a card keeps it.

Environment: OPENADAPT_BUNDLE_KEY is the passphrase of sealed bundles
(workflow.json.enc); without it a sealed bundle fails with missing_key.`,
		Example: `  openadapt-agent skill emit --from-flow-skill ./flow-out/invoice-entry --out ./skills
  openadapt-agent skill emit ./bundles/invoice-entry --out ./skills
  OPENADAPT_BUNDLE_KEY=… openadapt-agent skill emit ./sealed/invoice-entry --out ./skills --json`,
		Args: rangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var bundleDir string
			if len(args) == 1 {
				bundleDir = args[0]
			}
			if (bundleDir == "") == (fromFlowSkill == "") {
				return usageErrorf("skill emit: give exactly one of BUNDLE and --from-flow-skill SKILLDIR")
			}
			if out == "" {
				return usageErrorf("skill emit: --out DIR is required")
			}
			if fromFlowSkill != "" && cmd.Flags().Changed("flow-cli") {
				return usageErrorf("skill emit: --flow-cli applies only to BUNDLE")
			}
			for _, p := range []string{bundleDir, fromFlowSkill} {
				if p == "" {
					continue
				}
				if err := operandError(p, true, false); err != nil {
					return fmt.Errorf("skill emit: %w", err)
				}
			}
			flow, err := flowrun.SplitCommand(flowCLI)
			if err != nil {
				return usageErrorf("skill emit: --flow-cli: %w", err)
			}
			// The starter file is checked before anything is emitted.
			if labelsStarter != "" {
				if err := skill.CheckLabelsStarter(labelsStarter, force); err != nil {
					return skillScopeError("skill emit", err)
				}
			}
			res, err := skill.Emit(cmd.Context(), skill.EmitOptions{
				Bundle: bundleDir, FromFlowSkill: fromFlowSkill, OutDir: out,
				RunFlow:     flowEmitSkill(io, flow, flowTimeout, os.Environ(), showFlowOutput),
				AllowLegacy: allowLegacy, AllowUnavailable: allowUnavailable, Force: force, AgentVersion: buildinfo.Version(),
				CardStarter: cardStarter,
				Warn:        func(msg string) { warnf(io.Err, "skill emit: %s", msg) },
			})
			if err != nil {
				err = fmt.Errorf("skill emit: %w", err)
				switch {
				case errors.Is(err, skill.ErrName), errors.Is(err, skill.ErrDescription):
					return withHint(err, "rename the workflow in Flow and re-emit")
				case errors.Is(err, flowrun.ErrFlowNotFound):
					return withHint(err, "install openadapt-flow or pass --flow-cli, or use --from-flow-skill")
				}
				return err
			}
			if labelsStarter != "" {
				if err := skill.WriteLabelsStarter(labelsStarter, []string{res.WorkflowID}, force); err != nil {
					return fmt.Errorf("skill emit: the skill is at %s, but the labels starter was not written: %w", res.SkillDir, err)
				}
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType string `json:"mediaType"`
					*skill.EmitResult
					LabelsStarter string `json:"labels_starter,omitempty"`
				}{skillEmitMediaType, res, labelsStarter})
			}
			if _, err = fmt.Fprintln(io.Out, res.SkillDir); err != nil {
				return err
			}
			if labelsStarter != "" {
				if _, err = fmt.Fprintln(io.Out, labelsStarter); err != nil {
					return err
				}
			}
			if res.CardStarter != "" {
				_, err = fmt.Fprintln(io.Out, res.CardStarter)
			}
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&out, "out", "", "parent folder of the emitted skill (created if missing)")
	f.StringVar(&fromFlowSkill, "from-flow-skill", "", "wrap a folder Flow already emitted (no Flow needed)")
	f.StringVar(&flowCLI, "flow-cli", flowrun.DefaultFlowCommand, "Flow command, split with POSIX shell quoting")
	f.DurationVar(&flowTimeout, "flow-timeout", defaultFlowEmitTimeout, "time limit for Flow's emit-skill")
	f.BoolVar(&allowLegacy, "allow-legacy", false, "accept a legacy bundle without a manifest (not integrity-checked)")
	f.BoolVar(&allowUnavailable, "allow-unavailable", false, "emit a workflow that serve lists as unavailable; the skill then names no run tool")
	f.BoolVar(&force, "force", false, "replace a different skill already at DIR/<name> (and an existing --labels-starter FILE)")
	f.StringVar(&labelsStarter, "labels-starter", "", "also write FILE, a serve --labels file with the workflow id and an empty label and description to fill in")
	f.BoolVar(&cardStarter, "card-starter", false, "also write bundle/openadapt-card.json, a starter workflow card to fill in, into the skill")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	f.BoolVar(&showFlowOutput, "show-flow-output", false, "when Flow fails, also print the last 20 lines of its stderr (they may hold protected data)")
	addQuietFlag(c)
	return c
}

// defaultFlowEmitTimeout bounds Flow's emit-skill.
const defaultFlowEmitTimeout = 2 * time.Minute

// flowEmitSkill is skill emit's Flow runner: `<flow…> emit-skill BUNDLE
// --out DIR` as a Flow child process (the allowlisted environment built
// from environ, its own process group, stdin empty, the time limit).
// Whatever Flow printed is kept in <state>/flow-output/skill-emit.log,
// replacing the previous run's; a timeout or a non-zero exit names that
// file, and only with show (--show-flow-output) does the terminal get the
// last lines of Flow's stderr, each prefixed "flow: " (protected: never in
// JSON). The error itself names only what happened.
func flowEmitSkill(io *IO, flow []string, timeout time.Duration, environ []string, show bool) skill.FlowEmitter {
	return func(ctx context.Context, bundleDir, outDir string) error {
		if len(flow) == 0 {
			flow = []string{flowrun.DefaultFlowCommand}
		}
		if _, err := flowrun.LookFlow(flow); err != nil {
			return err
		}
		if timeout <= 0 {
			timeout = defaultFlowEmitTimeout
		}
		args := append(slices.Clone(flow), "emit-skill", bundleDir, "--out", outDir)
		exit := flowrun.Exec(ctx, flowrun.Command{Args: args, Env: flowrun.ChildEnv(environ, nil), Timeout: timeout})
		if exit.Err != nil {
			return exit.Err
		}
		logPath, keepErr := keepFlowOutput("skill-emit", flowOutputText(exit.Stdout, exit.StderrKept))
		failed := func(what string) error {
			if show {
				showFlowOutput(io.Err, exit.Stderr)
			}
			if keepErr != nil {
				warnf(io.Err, "skill emit: Flow's output was not kept: %v", keepErr)
				return fmt.Errorf("%s (Flow's output was not kept; --show-flow-output prints its end)", what)
			}
			return fmt.Errorf("%s (Flow's output is in %s; --show-flow-output prints its end)", what, logPath)
		}
		switch {
		case exit.TimedOut:
			return failed(fmt.Sprintf("timed out after %s", timeout))
		case exit.Canceled:
			return errors.New("canceled")
		case exit.Code != 0:
			return failed(fmt.Sprintf("exit code %d", exit.Code))
		}
		return nil
	}
}
