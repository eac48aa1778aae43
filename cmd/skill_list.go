package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// skillListMediaType identifies the `skill list --json` document.
const skillListMediaType = "application/vnd.openadapt-agent.skill-list+json;version=1"

// scopeFlags are --project/--global (-g), shared by install, list and
// remove.
type scopeFlags struct{ project, global bool }

func (s *scopeFlags) bind(c *cobra.Command, verb string) {
	c.Flags().BoolVar(&s.project, "project", false, verb+" in the project (default): the nearest folder holding .git, else the working directory")
	c.Flags().BoolVarP(&s.global, "global", "g", false, verb+" in the home directory")
}

func (s *scopeFlags) scope(cmd string) (skill.Scope, error) {
	if s.project && s.global {
		return "", usageErrorf("%s: --project and --global are exclusive", cmd)
	}
	if s.global {
		return skill.ScopeGlobal, nil
	}
	return skill.ScopeProject, nil
}

// skillScopeError maps a library error of list/remove: usage errors exit 2.
func skillScopeError(verb string, err error) error {
	err = fmt.Errorf("%s: %w", verb, err)
	if errors.Is(err, skill.ErrUsage) {
		return usageError(err)
	}
	return err
}

func newSkillListCmd(io *IO) *cobra.Command {
	var (
		agentIDs []string
		sf       scopeFlags
		asJSON   bool
	)
	c := &cobra.Command{
		Use:   "list [-a ID[,ID...]] [-g]",
		Short: "List the skills installed in the project or home directory",
		Long: `List the skills installed in the project (the nearest folder holding .git) or,
with -g/--global, the home directory: the real copy in .agents/skills/<name>,
each agent that has the skill (agents that read .agents/skills themselves are
"shared"; others have a symlink or a copy of their own), and the skills lock
file entry with its recorded hash checked against the folder (match, differs,
not_recorded, not_computable for a tree with a non-ASCII path, no_folder).
The hash is the one the skills CLI (npx skills) records, so skills installed by
either tool are listed alike. -a/--agent keeps only skills those agents have.

Nothing is followed through a symbolic link beneath a root: an agent folder
reached through one is skipped with a warning naming the link, and a lock file
that is a link, folder or FIFO is refused.`,
		Example: `  openadapt-agent skill list
  openadapt-agent skill list -g -a claude-code
  openadapt-agent skill list --json`,
		Args: noArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			scope, err := sf.scope("skill list")
			if err != nil {
				return err
			}
			res, err := skill.List(skill.ListOptions{
				ScopeOptions: skill.ScopeOptions{Scope: scope, Context: cmd.Context(),
					Warn: func(msg string) { warnf(io.Err, "skill list: %s", msg) }},
				Agents: agentIDs,
			})
			if err != nil {
				return skillScopeError("skill list", err)
			}
			if asJSON {
				return writeJSON(io.Out, struct {
					MediaType string `json:"mediaType"`
					*skill.ListResult
				}{skillListMediaType, res})
			}
			printSkillList(io, res)
			return nil
		},
	}
	f := c.Flags()
	f.StringSliceVarP(&agentIDs, "agent", "a", nil, "only skills these agents have (comma-separated ids)")
	sf.bind(c, "list")
	f.BoolVar(&asJSON, "json", false, "print one JSON document")
	addQuietFlag(c)
	return c
}

// printSkillList prints one block per skill: the name and folder, then
// the agents and the lock entry.
func printSkillList(io *IO, res *skill.ListResult) {
	if len(res.Skills) == 0 {
		fmt.Fprintf(io.Out, "no %s skills installed in %s\n", res.Scope, res.Root)
		return
	}
	for _, s := range res.Skills {
		folder := s.Folder
		if folder == "" {
			folder = "(no folder)"
		}
		fmt.Fprintf(io.Out, "%s  %s\n", shown(s.Name), shown(folder))
		var shared, own []string
		for _, a := range s.Agents {
			if a.Kind == skill.KindShared {
				shared = append(shared, a.Agent)
			} else {
				own = append(own, fmt.Sprintf("%s (%s %s)", a.Agent, a.Kind, shown(a.Path)))
			}
		}
		if len(shared) > 0 {
			fmt.Fprintf(io.Out, "  shared: %s\n", strings.Join(shared, ", "))
		}
		for _, o := range own {
			fmt.Fprintf(io.Out, "  agent: %s\n", o)
		}
		if s.Lock == nil {
			fmt.Fprintf(io.Out, "  lock: no entry\n")
		} else {
			fmt.Fprintf(io.Out, "  lock: %s %s, hash %s\n", shown(s.Lock.SourceType), shown(s.Lock.Source), s.Lock.HashStatus)
		}
	}
}

// shown prints a name or path read from disk: as is when it is printable,
// else Go-quoted, so a hostile folder name cannot move the cursor or fake
// a line.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
