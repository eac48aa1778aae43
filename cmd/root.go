// Package cmd is the openadapt-agent command tree and the only front door to
// the library packages. [Main] reads the process state; [Run] is pure and
// never exits, so tests can drive it in process.
package cmd

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/buildinfo"
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
}

// Main runs the command line of the current process and returns its exit
// code. SIGINT and SIGTERM cancel the command's context.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	io := &IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr, OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr), InTTY: isTerminal(os.Stdin)}
	return run(ctx, os.Args[1:], io)
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
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error { return applyQuiet(io, c) }

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

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
