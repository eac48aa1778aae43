package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/buildinfo"
	"github.com/OpenAdaptAI/openadapt-agent/internal/mailbox"
)

// authoringOpts selects the local authoring session (the Flow helper's).
type authoringOpts struct {
	stderr io.Writer
}

// errNoAuthoringSession is the fail-closed answer when no local authoring
// session can be opened.
var errNoAuthoringSession = errors.New("openadapt_flow.authoring is not available")

// openAuthoringSession starts the Flow helper, probes
// openadapt_flow.authoring and opens the session. Until the helper is in this
// build it fails closed: no session, nothing sent. Tests replace it.
var openAuthoringSession = func(ctx context.Context, o authoringOpts) (authoring.Session, func(), error) {
	return nil, nil, fmt.Errorf("%w: this build cannot start the Flow helper", errNoAuthoringSession)
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
	return c
}

func runAuthoringConnect(ctx context.Context, io *IO, o authoringOpts, arg string) error {
	raw := arg
	if arg == "-" {
		line, err := bufio.NewReaderSize(io.In, mailbox.MaxLinkBytes+2).ReadString('\n')
		if err != nil && line == "" {
			return usageErrorf("reading the runner link from stdin: nothing was read")
		}
		raw = strings.TrimRight(line, "\r\n")
	}
	// 1. The link, before anything else (mailbox.md §1).
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
	// spent (flow-helper.md §12.18).
	sess, closeSess, err := openAuthoringSession(ctx, o)
	if err != nil {
		if errors.Is(err, errNoAuthoringSession) {
			return usageErrorf("%v; nothing was sent and the runner link is still unused", err)
		}
		return usageErrorf("the local authoring session could not be opened; nothing was sent and the runner link is still unused")
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
