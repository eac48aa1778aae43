// Package cmd is the openadapt-agent command tree and the only front door to
// the library packages. [Main] reads the process state; [Run] is pure and
// never exits, so tests can drive it in process.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// IO is what a command may use of the process: its streams and whether each
// output stream is a terminal. Human niceties (progress, colour) appear only
// when the stream is a terminal.
type IO struct {
	In     io.Reader
	Out    io.Writer
	Err    io.Writer
	OutTTY bool
	ErrTTY bool
	// InTTY: stdin is a terminal, so a command may ask for confirmation
	// (skill remove).
	InTTY bool

	grace *atomic.Int64 // Main's backstop grace for the running command; nil under Run
	// process: the command owns the whole process (Main, not Run), so a
	// one-shot command may tune the runtime for its own run (oneShotGC).
	process bool
}

// Main runs the command line of the current process and returns its exit
// code. The first SIGINT or SIGTERM cancels the command's context, and the
// command starts shutting down; if it has not returned within its grace
// ([shutdownGrace], longer only for the commands in [childGrace]), or on a
// second signal, the backstop removes every pending temporary file and
// staging folder and exits with 128+signal. Every command thus starts
// shutting down within 1 s of the first signal.
func Main() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	grace := new(atomic.Int64)
	go backstop(sigs, cancel, backstopEnv{stderr: os.Stderr, exit: os.Exit, after: time.After, cleanup: fsutil.RemovePending, grace: grace})
	io := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr), InTTY: isTerminal(os.Stdin), grace: grace, process: true}
	return run(ctx, os.Args[1:], io)
}

// shutdownGrace is how long a command may keep running after the first
// SIGINT/SIGTERM canceled its context before the backstop exits.
const shutdownGrace = time.Second

// childGrace is the stated exception to that second: commands that
// stop child process groups with flowrun's cancel grace (SIGTERM, then
// SIGKILL after 2 s) get that grace plus a second, and serve also its
// withheld-EOF window (2 s), so the backstop never cuts their own cleanup
// short. Keys are command paths without the program name.
var childGrace = map[string]time.Duration{
	"serve":             flowrun.DefaultCancelGrace + 2*time.Second + time.Second,
	"tutorial prepare":  flowrun.DefaultCancelGrace + time.Second,
	"skill emit":        flowrun.DefaultCancelGrace + time.Second,
	"emit-skill":        flowrun.DefaultCancelGrace + time.Second,
	"authoring connect": flowrun.DefaultCancelGrace + time.Second,
}

// graceFor is c's backstop grace, 0 for the default [shutdownGrace].
func graceFor(c *cobra.Command) time.Duration {
	if d, ok := childGrace[commandName(c)]; ok {
		return d
	}
	if p := c.Parent(); p != nil && commandName(p) == "attention" {
		return flowrun.DefaultCancelGrace + time.Second // the helper's child group
	}
	return 0
}

// backstopEnv is what the backstop touches of the process (tests fake it).
type backstopEnv struct {
	stderr  io.Writer
	exit    func(int)
	after   func(time.Duration) <-chan time.Time
	cleanup func() int
	grace   *atomic.Int64 // the running command's grace in ns (0: default), see [graceFor]
}

// backstop waits for the first signal on sigs, cancels the command's
// context, and exits the process when the command has not returned within
// its grace or a second signal arrives: pending temporaries are removed
// first, so nothing half-written stays behind, and the exit code is
// 128+signal. It never returns once a signal arrived (env.exit does not
// return in the real process).
func backstop(sigs <-chan os.Signal, cancel context.CancelFunc, env backstopEnv) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	cancel()
	grace := shutdownGrace
	if g := env.grace.Load(); g > 0 {
		grace = time.Duration(g)
	}
	how := "did not stop within " + grace.String()
	select {
	case s, ok := <-sigs:
		if ok {
			sig, how = s, "second signal"
		}
	case <-env.after(grace):
	}
	n := env.cleanup()
	fmt.Fprintf(env.stderr, "openadapt-agent: error: interrupted by %s (%s); exiting, %d temporary files removed\n", sigName(sig), how, n)
	env.exit(128 + sigNumber(sig))
}

func sigName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

func sigNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return int(syscall.SIGINT)
}

// Run runs the command line args with the given streams and returns the exit
// code. It never calls os.Exit and never touches the process's own streams.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if stdin == nil {
		stdin = eofReader{}
	}
	return run(ctx, args, &IO{In: stdin, Out: stdout, Err: stderr})
}

func run(ctx context.Context, args []string, io *IO) int {
	out := &countingWriter{w: io.Out}
	io.Out = out
	root := newRootCmd(io)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if errors.Is(err, bundle.ErrMissingKey) {
		err = withHint(err, missingKeyHint)
	}
	printError(io.Err, err)
	code := exitCode(err)
	// --json promises one document on stdout for exit 0 and 1: a command
	// that fails before printing its own gets the failure document.
	if code == exitFailed && out.n == 0 && jsonRequested(c) {
		_ = writeJSON(out, newFailureDoc(c, err))
	}
	return code
}

func newRootCmd(io *IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "openadapt-agent",
		Short: "Governed agent access to OpenAdapt workflow bundles",
		Long: `openadapt-agent is the agent-facing side of OpenAdapt: a local stdio MCP server
for verified workflow bundles, Agent Skills that wrap them, offline verification
of OpenAdapt's signed admission ledgers, and bundle verification exactly as
openadapt-flow does it.`,
		Example: `  openadapt-agent doctor --bundles ~/openadapt/bundles
  openadapt-agent ledger verify
  openadapt-agent bundle verify ./bundles
  openadapt-agent serve --bundles ~/openadapt/bundles`,
		Version:           buildinfo.Version(),
		SilenceErrors:     true,
		SilenceUsage:      true,
		DisableAutoGenTag: true,
	}
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.Err)
	root.SetVersionTemplate("openadapt-agent {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if io.grace != nil { // only Main has a backstop
			io.grace.Store(int64(graceFor(c)))
		}
		return applyQuiet(io, c)
	}

	root.AddCommand(
		newVersionCmd(io),
		newBundleCmd(io),
		newLedgerCmd(io),
		newSkillCmd(io),
		newEmitSkillAliasCmd(io),
		newServeCmd(io),
		newTutorialCmd(io),
		newDoctorCmd(io),
		newAuthoringCmd(io),
		newAttentionCmd(io),
		newRunsCmd(io),
		newReleaseCmd(io),
	)
	addCompletionCmd(root)
	registerCompletions(root)
	// Unknown commands are usage errors, not silent help.
	for _, c := range append(root.Commands(), root) {
		if c.HasSubCommands() && c.RunE == nil && c.Run == nil {
			c.Args = unknownSubcommand
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
	return root
}

// isTerminal reports whether f is a terminal: the terminal ioctl must
// succeed. A character device is not enough (/dev/null is one, and a
// command that asks for confirmation there would read end of input and
// decline instead of refusing as it does without a terminal).
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
