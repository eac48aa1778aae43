package cmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring/mailbox"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// authoringOpts selects the local authoring session (the Flow helper's).
type authoringOpts struct {
	stderr     io.Writer
	flowPython string
	flowCLI    string
	passEnv    []string
	config     string
	url        string
	headed     bool
}

// errNoAuthoringSession is the fail-closed answer when no local authoring
// session can be opened.
var errNoAuthoringSession = errors.New("openadapt_flow.authoring is not available")

// noSessionError is errNoAuthoringSession with authoring's own dependency
// message (what is missing, and the Flow version).
type noSessionError struct{ msg string }

func (e noSessionError) Error() string { return e.msg }
func (e noSessionError) Unwrap() error { return errNoAuthoringSession }

// testOnlyOpenSession, when set, replaces openAuthoringSession (tests with
// a scripted session).
var testOnlyOpenSession func(ctx context.Context, o authoringOpts) (authoring.Session, func(), error)

// openAuthoringSession starts the Flow helper in a private 0700 temporary
// directory of the per-user state directory, probes
// openadapt_flow.authoring and opens the session; the recording is kept in
// <per-user state>/authoring/<instance>.
func openAuthoringSession(ctx context.Context, o authoringOpts) (authoring.Session, func(), error) {
	words, err := flowrun.SplitCommand(o.flowCLI)
	if err != nil || len(words) == 0 {
		return nil, nil, usageErrorf("--flow-cli is not a command")
	}
	for _, n := range o.passEnv {
		if !flowrun.ValidPassEnvName(n) {
			return nil, nil, usageErrorf("--pass-env %q is not an environment variable name", n)
		}
	}
	// The session's backend: from --config, read by the helper with Flow's
	// loader (--url/--headed override it), else --url's fresh browser or the
	// local window (docs/authoring.md, "Configuration").
	var url *string
	if o.url != "" {
		url = &o.url
	}
	config, backend := "", ""
	if o.config != "" {
		abs, err := filepath.Abs(o.config)
		if err != nil {
			return nil, nil, usageErrorf("the deployment config could not be read: %s", o.config)
		}
		config = abs
	} else {
		backend = authoring.Backend(o.url)
	}
	base, err := authoring.UserStateDir(os.Getenv)
	if err != nil {
		return nil, nil, usageError(err)
	}
	var idb [8]byte
	_, _ = rand.Read(idb[:])
	instance := "connect-" + hex.EncodeToString(idb[:])
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, nil, usageErrorf("creating the state directory failed")
	}
	root, err := fsutil.OpenRoot(base, "the state directory")
	if err != nil {
		return nil, nil, usageError(err)
	}
	keepRoot := false
	defer func() {
		if !keepRoot {
			root.Close()
		}
	}()
	outRel := "authoring/" + instance
	if err := root.MkdirAll(outRel, 0o700); err != nil {
		return nil, nil, usageError(err)
	}
	// The helper's private state lives in a 0700 folder of the state
	// directory, made through the root (never through a link) and pending
	// for the signal backstop, so even a forced exit leaves nothing behind.
	tmpRel, err := root.MkdirTemp("tmp", instance+"-")
	if err != nil {
		return nil, nil, usageErrorf("creating a private temporary directory failed")
	}
	tmp := root.Join(tmpRel)
	sess, err := authoring.Open(ctx, authoring.OpenOptions{
		Helper: flowhelper.LaunchOptions{FlowCommand: words, FlowPython: o.flowPython, Environ: os.Environ(), PassEnv: o.passEnv,
			StateDir: tmp, Instance: instance},
		DeploymentConfig: config, BackendKind: backend, URL: url, Headed: o.headed, OutDir: root.Join(outRel),
	})
	if err != nil {
		var ue *authoring.UnavailableError
		var se *flowhelper.StartError
		var ce *authoring.ConfigError
		switch {
		case errors.As(err, &ue):
			_ = root.RemoveAll(tmpRel)
			_ = root.Remove(outRel)
			return nil, nil, noSessionError{ue.Error()}
		case errors.As(err, &se):
			_ = root.RemoveAll(tmpRel)
			_ = root.Remove(outRel)
			return nil, nil, usageErrorf("%s", se.Msg)
		case errors.As(err, &ce):
			_ = root.RemoveAll(tmpRel)
			_ = root.Remove(outRel)
			ce.Config = o.config
			return nil, nil, usageErrorf("%s", ce.Error())
		}
		// The protected local log stays for the person to read.
		return nil, nil, fmt.Errorf("%w: %v (the protected local log is under %s)", errNoAuthoringSession, err, filepath.Join(tmp, "logs"))
	}
	fmt.Fprintf(o.stderr, "authoring connect: authoring session open (%s backend); the recording stays in %s\n", sess.Info.BackendKind, root.Join(outRel))
	keepRoot = true
	return sess, func() { sess.Close(); _ = root.RemoveAll(tmpRel); root.Close() }, nil
}

// testOnlyTerminal, when set by tests, replaces the controlling terminal.
var testOnlyTerminal func() (mailbox.Terminal, io.Closer, error)

// newAuthoringConnectCmd is `authoring connect LINK`.
func newAuthoringConnectCmd(io *IO) *cobra.Command {
	var o authoringOpts
	c := &cobra.Command{
		Use:   "connect LINK",
		Short: "Let a hosted chat app drive authoring on this computer, one Allow at a time",
		Long: `connect lets ChatGPT or Claude in the browser teach a workflow on this
computer. Paste the runner link the chat app or the job page gives you
(openadapt://runner?pack=…&bind=oab_…&origin=https://openadapt.ai), or "-" to
read it from stdin so it stays out of the process list.

The client only makes outbound HTTPS requests to https://openadapt.ai; it
never listens. It claims the job with the link's one-time bind token, then
polls for commands. The first time a chat account asks to drive the job, the
terminal asks "Allow ChatGPT to drive this job? [y/N]": answer y only if you
started this from that chat. Commands from any other account are refused. The
chat app can observe, record, click and pause; it can never type: when it
pauses for input, type in the app yourself and press Enter here.

The session drives the local window by default, or with --url a fresh
browser (--headed, so you can sign in there). With --config it uses the
deployment config's backend (kind, url, headed, read with Flow's own
loader); --url and --headed override it.

It needs a controlling terminal (to ask you) and a local authoring session
(Flow's openadapt_flow.authoring). Both are checked before anything is sent,
so a refused start leaves the link unused.

Exit status: 0 when the job halts (or you press Ctrl-C and the mailbox is
told), 1 when the mailbox refuses or misbehaves (401, 404, 409, 410, or three
bad responses in a row), 2 for a malformed link or a missing terminal or
authoring session.`,
		Example: `  openadapt-agent authoring connect 'openadapt://runner?pack=p.AbCdEf012345&bind=oab_…&origin=https://openadapt.ai'
  pbpaste | openadapt-agent authoring connect -`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.stderr = io.Err
			return runAuthoringConnect(c.Context(), io, o, args[0])
		},
	}
	f := c.Flags()
	f.StringVar(&o.flowPython, "flow-python", "", "the Python that runs Flow (default: from the Flow command's shebang)")
	f.StringVar(&o.flowCLI, "flow-cli", "openadapt-flow", "Flow command prefix, used to find Flow's Python (POSIX shell quoting, no expansion)")
	f.StringArrayVar(&o.passEnv, "pass-env", nil, "pass one more environment variable to Flow (repeatable)")
	f.StringVar(&o.config, "config", "", "deployment config: the backend to author on (kind, url, headed), read with Flow's loader")
	f.StringVar(&o.url, "url", "", "drive a fresh Playwright Chromium at this URL (needs --headed) instead of the local window; with --config, overrides its URL")
	f.BoolVar(&o.headed, "headed", false, "show the browser window, so you can sign in there during a pause")
	return c
}

func runAuthoringConnect(ctx context.Context, io *IO, o authoringOpts, arg string) error {
	raw := arg
	if arg == "-" {
		line, err := readLinkLine(ctx, io.In, mailbox.MaxLinkBytes)
		if err != nil {
			return err
		}
		raw = line
	}
	// 1. The link, before anything else (docs/mailbox.md, "The runner link").
	link, err := mailbox.ParseLink(raw, os.Getenv(mailbox.OriginEnv))
	if err != nil {
		return withHint(usageError(err), "paste the whole link the chat app gave you: openadapt://runner?pack=…&bind=oab_…&origin=https://openadapt.ai")
	}
	// 2. The controlling terminal: Allow is asked there, never assumed.
	openTerm := mailbox.OpenTerminal
	if testOnlyTerminal != nil {
		openTerm = testOnlyTerminal
	}
	term, closer, err := openTerm()
	if err != nil {
		return withHint(usageErrorf("authoring connect needs a controlling terminal to ask you to Allow each chat account; nothing was sent"),
			"run it in a terminal window")
	}
	defer closer.Close()
	// 3. The local authoring session, probed before the one-time token is
	// spent (docs/mailbox.md, "Before the claim").
	open := openAuthoringSession
	if testOnlyOpenSession != nil {
		open = testOnlyOpenSession
	}
	sess, closeSess, err := open(ctx, o)
	if err != nil {
		var u *usageErr
		if errors.As(err, &u) && !errors.Is(err, errNoAuthoringSession) {
			return withHint(err, "nothing was sent and the runner link is still unused")
		}
		return usageErrorf("%v; nothing was sent and the runner link is still unused", err)
	}
	defer closeSess()
	err = mailbox.Run(ctx, mailbox.Config{
		Link: link, Session: sess, Terminal: term, Log: io.Err,
		UserAgent: "openadapt-agent/" + buildinfo.Version(),
	})
	if err != nil {
		return fmt.Errorf("authoring connect: %w", err)
	}
	return nil
}
