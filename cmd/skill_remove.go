package cmd

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillRemoveMediaType identifies the `skill remove --json` document.
const skillRemoveMediaType = "application/vnd.openadapt-agent.skill-remove+json;version=1"

func newSkillRemoveCmd(io *IO) *cobra.Command {
	var (
		agentIDs []string
		sf       scopeFlags
		yes      bool
		asJSON   bool
	)
	c := &cobra.Command{
		Use:     "remove NAME... [-a ID[,ID...]] [-g] [-y]",
		Aliases: []string{"rm"},
		Short:   "Remove installed skills from the project or home directory",
		Long: `Remove installed skills by folder name: each agent's own entry (a symlink is
removed itself, never followed; a copy is deleted), the real copy in
.agents/skills/<name>, and the skills lock file entry (the lock file is
replaced atomically, other entries kept). With -a/--agent only those agents'
own entries go; the shared copy, which codex, cursor and the other agents that
read .agents/skills use, stays unless every one of them is named.

Every deletion stays beneath its root (the project, the home directory, or an
agent folder such as $CLAUDE_CONFIG_DIR): a symbolic link among the folders
(.claude, .claude/skills, .agents, …) refuses the whole removal, naming the
link, before anything is deleted; a lock file that is a link, folder or FIFO is
refused too. On a terminal the removal asks for confirmation unless -y/--yes;
without a terminal it needs -y.`,
		Example: `  openadapt-agent skill remove mockmed-triage
  openadapt-agent skill remove mockmed-triage -a claude-code -y
  openadapt-agent skill remove mockmed-triage -g -y --json`,
		Args: minArgs(1),
		// Completes the names of the skills installed in the scope.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			scope, err := sf.scope("skill remove")
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			res, err := skill.List(skill.ListOptions{ScopeOptions: skill.ScopeOptions{Scope: scope, Context: cmd.Context()}})
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, s := range res.Skills {
				if !slices.Contains(args, s.Name) {
					names = append(names, s.Name)
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			scope, err := sf.scope("skill remove")
			if err != nil {
				return err
			}
			if !yes && !io.InTTY {
				return usageError(withHint(fmt.Errorf("skill remove: stdin is not a terminal, so removal cannot be confirmed"), "pass -y to remove without asking"))
			}
			opt := skill.RemoveOptions{
				ScopeOptions: skill.ScopeOptions{Scope: scope, Context: cmd.Context(),
					Warn: func(msg string) { warnf(io.Err, "skill remove: %s", msg) }},
				Names: args, Agents: agentIDs,
			}
			if !yes {
				opt.Confirm = func(plan *skill.RemoveResult) (bool, error) { return confirmRemoval(io, plan) }
			}
			res, err := skill.Remove(opt)
			if err != nil {
				return skillScopeError("skill remove", err)
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType string `json:"mediaType"`
					*skill.RemoveResult
				}{skillRemoveMediaType, res})
			}
			for _, s := range res.Skills {
				for _, p := range s.Removed {
					fmt.Fprintf(io.Out, "removed %s %s\n", p.Kind, shown(p.Path))
				}
				if s.Kept != "" {
					fmt.Fprintf(io.Out, "kept %s (other agents read it)\n", shown(s.Kept))
				}
			}
			fmt.Fprintf(io.Out, "lock %s\n", res.Lock)
			return nil
		},
	}
	f := c.Flags()
	f.StringSliceVarP(&agentIDs, "agent", "a", nil, "remove only for these agents (comma-separated ids)")
	sf.bind(c, "remove")
	f.BoolVarP(&yes, "yes", "y", false, "remove without asking for confirmation (required without a terminal)")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}

// confirmRemoval prints the plan on stderr and reads one answer line from
// stdin: y or yes (any case) confirms; anything else, or end of input,
// declines.
func confirmRemoval(io *IO, plan *skill.RemoveResult) (bool, error) {
	n := 0
	for _, s := range plan.Skills {
		for _, p := range s.Removed {
			fmt.Fprintf(io.Err, "  delete %s %s\n", p.Kind, shown(p.Path))
			n++
		}
		if s.LockEntry {
			fmt.Fprintf(io.Err, "  drop lock entry %s\n", shown(s.Name))
		}
	}
	fmt.Fprintf(io.Err, "remove %d skill(s) from the %s scope (%d paths)? [y/N] ", len(plan.Skills), plan.Scope, n)
	line, err := bufio.NewReader(io.In).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(io.Err)
		return false, nil
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}
