package flowhelper

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// LaunchOptions say which Flow to start the helper for, with which
// environment, and where its private files go. [Launch] is the one way
// every command (serve, attention, tutorial prepare, authoring connect,
// doctor) starts a helper.
type LaunchOptions struct {
	// FlowCommand is the Flow command's words (flowrun.SplitCommand of
	// --flow-cli, its first word possibly resolved already); nil or empty
	// means openadapt-flow. When FlowPython is "", Flow's Python is read from
	// the #! line of its first word, looked up on the child environment's
	// PATH ([FindPython]).
	FlowCommand []string
	// FlowPython is --flow-python: the interpreter to use ("" = from the
	// Flow command).
	FlowPython string
	// CheckRunVersion, when FlowPython is set, runs `<FlowCommand>
	// --version` and requires the Flow version the helper reports
	// ([CheckRunVersion]): runs and helper must use the same Flow.
	CheckRunVersion bool

	// Environ is the environment the child's is built from (os.Environ()
	// form) and PassEnv the --pass-env names: the helper gets
	// flowrun.ChildEnv(Environ, PassEnv) without the synthetic delivery
	// marker, and nothing else.
	Environ []string
	PassEnv []string
	// RecordedAuthority makes the helper use the durable-authority database
	// a server recorded in StateDir ([WriteAuthorityRecord]) when a usable
	// record exists: only the journal that holds a run's pause accepts
	// decisions on it. AuthorityNotice, when set, is called (before the
	// helper starts) when the recorded database differs from the one the
	// environment names.
	RecordedAuthority bool
	AuthorityNotice   func()

	// StateDir, Instance, Dir, Operator, Mirror, OnDead and Timeouts are
	// the [Config] fields of the same names.
	StateDir string
	Instance string
	Dir      string
	Operator string
	Mirror   io.Writer
	OnDead   func()
	Timeouts Timeouts
	// Features are the features the caller will use: after hello, Launch
	// applies each one's gate in this order ([Helper.CheckFeature]) and
	// fails with the first refusal. hello itself never refuses a version.
	Features []Feature
	// OwnerLive, when set, makes Launch first remove what helpers of dead
	// owners left in StateDir ([Sweep]); it reports whether the owner with
	// that instance id still runs.
	OwnerLive func(id string) bool
}

// Launch starts a helper: it builds the child environment, finds Flow's
// Python, sweeps dead owners' leftovers (with OwnerLive), stages and spawns
// the program, completes hello, with CheckRunVersion compares the run
// command's Flow version, and applies the gates of Features. Every failure is a [*StartError] carrying the
// operator message (its Stage says which step failed); nothing is left
// running when Launch fails.
func Launch(ctx context.Context, o LaunchOptions) (*Helper, error) {
	env := flowrun.ChildEnv(o.Environ, o.PassEnv)
	if o.RecordedAuthority {
		if p := ReadAuthorityRecord(ctx, o.StateDir); p != "" {
			dir := o.Dir
			if dir == "" {
				dir, _ = os.Getwd()
			}
			if o.AuthorityNotice != nil && AuthorityDB(env, dir) != p {
				o.AuthorityNotice()
			}
			env = WithAuthorityDB(env, p)
		}
	}
	words := o.FlowCommand
	if len(words) == 0 {
		words = []string{flowrun.DefaultFlowCommand}
	}
	interp, err := FindPython(o.FlowPython, words[0], flowrun.EnvValue(env, "PATH"))
	if err != nil {
		return nil, err
	}
	if o.OwnerLive != nil {
		Sweep(o.StateDir, o.OwnerLive, time.Now())
	}
	h, err := Start(ctx, Config{Interpreter: interp, StateDir: o.StateDir, Instance: o.Instance, Env: env,
		Dir: o.Dir, Operator: o.Operator, Mirror: o.Mirror, OnDead: o.OnDead, Timeouts: o.Timeouts})
	if err != nil {
		return nil, withInterpreter(err, interp)
	}
	if o.CheckRunVersion && o.FlowPython != "" {
		if err := CheckRunVersion(ctx, words, env, o.Dir, h.Hello().FlowVersion); err != nil {
			_, _ = h.Close()
			return nil, withInterpreter(err, interp)
		}
	}
	for _, f := range o.Features {
		if err := h.CheckFeature(ctx, f); err != nil {
			_, _ = h.Close()
			return nil, withInterpreter(err, interp)
		}
	}
	return h, nil
}

// withInterpreter records interp in err's [*StartError].
func withInterpreter(err error, interp Interpreter) error {
	var se *StartError
	if errors.As(err, &se) {
		se.Interpreter = interp
	}
	return err
}
