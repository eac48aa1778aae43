package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/tutorial"
)

// newTutorialCmd is `tutorial` with its one subcommand, `prepare`, which
// builds Flow's synthetic MockMed bundle ahead of serve's tutorial mode.
func newTutorialCmd(io *IO) *cobra.Command {
	c := &cobra.Command{
		Use:     "tutorial",
		Short:   "Prepare Flow's synthetic MockMed tutorial for serve",
		Example: `  openadapt-agent tutorial prepare --runs-dir /ABSOLUTE/PATH/TO/runs`,
	}
	c.AddCommand(newTutorialPrepareCmd(io))
	return c
}

type tutorialPrepareOptions struct {
	runsDir, flowCLI, flowPython, policy string
	headed, rebuild                      bool
	passEnv                              []string
}

func newTutorialPrepareCmd(io *IO) *cobra.Command {
	var o tutorialPrepareOptions
	c := &cobra.Command{
		Use:   "prepare",
		Short: "Record, compile and certify the synthetic tutorial bundle with Flow",
		Long: `prepare builds Flow's synthetic MockMed tutorial bundle under
<runs-dir>/synthetic-tutorial/ with Flow's own tutorial code: it records the
triage demonstration against MockMed's fault server on a loopback port, then
compiles it and certifies it against clinical-write. Everything is synthetic
and nothing leaves this computer.

The first preparation drives a headless browser and takes about a minute. A
later run, and serve's tutorial mode (serve --allow-run without --bundles, or
serve --tutorial) with the same --runs-dir, reuse the bundle while it still
verifies and was prepared by the same Flow version and agent build.

Progress goes to stderr, one line per phase; stdout gets one line when the
bundle is ready: "ready local_quickstart sha256:<digest> <bundle dir>".
Exit 0 when ready, 1 when preparation failed (details in the protected local
log, <runs-dir>/.openadapt-agent/logs/helper-<id>.log), 2 for usage errors.`,
		Example: `  openadapt-agent tutorial prepare --runs-dir /ABSOLUTE/PATH/TO/runs
  openadapt-agent tutorial prepare --runs-dir /ABSOLUTE/PATH/TO/runs --flow-python /opt/flow/bin/python3`,
		Args: noArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return runTutorialPrepare(ctx, io, o)
		},
	}
	f := c.Flags()
	f.SortFlags = false
	f.StringVar(&o.runsDir, "runs-dir", "", "runs directory shared with serve (default <per-user state dir>/openadapt-agent/runs, as serve)")
	f.StringVar(&o.flowCLI, "flow-cli", flowrun.DefaultFlowCommand, "Flow command prefix; the helper runs on its Python interpreter")
	f.StringVar(&o.flowPython, "flow-python", "", "Flow's Python interpreter, when it cannot be read from the Flow command")
	f.StringVar(&o.policy, "policy", "", "policy for the synthetic deployment config (default clinical-write)")
	f.BoolVar(&o.headed, "headed", false, "record in a visible browser")
	f.BoolVar(&o.rebuild, "rebuild", false, "prepare afresh even when a reusable bundle exists")
	f.StringArrayVar(&o.passEnv, "pass-env", nil, "pass one more environment variable to Flow (repeatable, at most 32)")
	return c
}

func runTutorialPrepare(ctx context.Context, io *IO, o tutorialPrepareOptions) error {
	words, err := flowrun.SplitCommand(o.flowCLI)
	if err != nil || len(words) == 0 {
		return usageErrorf("--flow-cli: %s", "not a command")
	}
	if len(o.passEnv) > flowrun.MaxPassEnv {
		return usageErrorf("--pass-env accepts at most %d names", flowrun.MaxPassEnv)
	}
	for _, n := range o.passEnv {
		if !flowrun.ValidPassEnvName(n) {
			return usageErrorf("--pass-env expects an environment variable name")
		}
	}
	runs, err := runsDirOrDefault(o.runsDir)
	if err != nil {
		return err
	}
	err = privateDir(runs, true)
	state := filepath.Join(runs, ".openadapt-agent")
	if err == nil {
		err = privateDir(state, false)
	}
	if err != nil {
		return usageErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", runs)
	}
	policy := o.policy
	if policy != "" && (filepath.Base(policy) != policy) {
		if abs, err := filepath.Abs(policy); err == nil {
			policy = abs
		}
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	instance := hex.EncodeToString(id[:])
	h, err := flowhelper.Launch(ctx, flowhelper.LaunchOptions{FlowCommand: words, FlowPython: o.flowPython, CheckRunVersion: true,
		Environ: os.Environ(), PassEnv: o.passEnv, StateDir: state, Instance: instance,
		Features: []flowhelper.Feature{flowhelper.FeatureTutorial}})
	if err != nil {
		return helperStartError(err)
	}
	defer func() { _, _ = h.Close() }()
	// The helper does not forward cancellation, so a signal closes it
	// (its process group, browser included, is terminated) and the pending
	// request fails. A half-built bundle is never reused: prepared.json is
	// written last.
	type prepared struct {
		s   *tutorial.Session
		err error
	}
	done := make(chan prepared, 1)
	go func() {
		s, err := tutorial.Prepare(context.Background(), tutorial.FromHelper(h), tutorial.Options{RunsDir: runs, StateDir: state,
			Instance: instance, Headed: o.headed, Policy: policy, NoReuse: o.rebuild, Progress: io.Err})
		done <- prepared{s, err}
	}()
	var p prepared
	select {
	case p = <-done:
	case <-ctx.Done():
		_, _ = h.Close()
		<-done
		fmt.Fprintln(io.Err, "tutorial: interrupted; nothing was kept half-prepared")
		return errCheckFailed
	}
	if p.err != nil {
		fmt.Fprintf(io.Err, "tutorial: %s\n", oneLine(p.err.Error()))
		fmt.Fprintf(io.Err, "tutorial: the protected local log is %s\n", h.LogPath)
		return errCheckFailed
	}
	defer p.s.Close()
	fmt.Fprintf(io.Out, "ready %s sha256:%s %s\n", tutorial.WorkflowID, p.s.ContentDigest, p.s.BundleDir)
	return nil
}

// helperStartError is the exact operator message of a helper that could
// not start (paths there are operator configuration); it fails with exit 1.
func helperStartError(err error) error {
	var se *flowhelper.StartError
	if errors.As(err, &se) {
		return errors.New(se.Msg)
	}
	return errors.New("the Flow helper could not be started")
}

// privateDir creates dir with mode 0700 (parents too when parents is set)
// or accepts an existing directory; a symlink is refused, never followed.
func privateDir(dir string, parents bool) error {
	var err error
	if parents {
		err = os.MkdirAll(filepath.Dir(dir), 0o700)
	}
	if err == nil {
		err = os.Mkdir(dir, 0o700)
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}
