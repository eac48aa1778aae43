package serve

import (
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// flowCommand is how this server reaches Flow: the --flow-cli command,
// resolved on every use (docs/runs.md "The command line"), and the
// environment every Flow child and the helper get (docs/runs.md "Child
// environment").
type flowCommand struct {
	cli  string
	look func(string) (string, error) // nil: flowrun.LookFlow
	// env is flowrun.ChildEnv of the server's environment and --pass-env.
	env []string
}

func newFlowCommand(o Options) *flowCommand {
	return &flowCommand{cli: o.FlowCLI, look: o.LookPath, env: flowrun.ChildEnv(o.Environ, o.PassEnv)}
}

// resolve splits --flow-cli and resolves its program: the argv prefix of
// a Flow command, or an error when Flow cannot be found.
func (f *flowCommand) resolve() ([]string, error) {
	words, err := flowrun.SplitCommand(f.cli)
	if err != nil {
		return nil, err
	}
	var p string
	if f.look != nil {
		p, err = f.look(words[0])
	} else {
		p, err = flowrun.LookFlow(words)
	}
	if err != nil {
		return nil, err
	}
	return append([]string{p}, words[1:]...), nil
}
