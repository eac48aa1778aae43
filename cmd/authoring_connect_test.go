package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring/mailbox"
	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// scriptedTerminal answers every Allow with yes.
type scriptedTerminal struct{ prompts []string }

func (s *scriptedTerminal) Confirm(_ context.Context, q string) (bool, error) {
	s.prompts = append(s.prompts, q)
	return true, nil
}
func (s *scriptedTerminal) WaitEnter(_ context.Context, m string) error {
	s.prompts = append(s.prompts, m)
	return nil
}

type recordingSession struct{ calls []string }

func (r *recordingSession) Call(_ context.Context, tool string, _ map[string]any) (map[string]any, error) {
	r.calls = append(r.calls, tool)
	return map[string]any{"backend": "web", "provider": "playwright_ax"}, nil
}

// connectEnv installs a fake mailbox, a terminal and (when sess is not nil) a
// session for one in-process run.
func connectEnv(t *testing.T, term mailbox.Terminal, sess authoring.Session) *fm.Server {
	t.Helper()
	srv := fm.New(t)
	t.Setenv(mailbox.OriginEnv, srv.Origin())
	oldTerm, oldOpen := testOnlyTerminal, testOnlyOpenSession
	t.Cleanup(func() { testOnlyTerminal, testOnlyOpenSession = oldTerm, oldOpen })
	testOnlyTerminal = func() (mailbox.Terminal, io.Closer, error) {
		if term == nil {
			return nil, nil, mailbox.ErrNoTerminal
		}
		return term, nopCloser{}, nil
	}
	if sess != nil {
		testOnlyOpenSession = func(context.Context, authoringOpts) (authoring.Session, func(), error) {
			return sess, func() {}, nil
		}
	}
	return srv
}

func runConnect(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), append([]string{"authoring", "connect"}, args...), strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestAuthoringConnectRefusesBeforeSending(t *testing.T) {
	for _, tc := range []struct {
		name    string
		link    func(*fm.Server) string
		term    bool
		session bool
		stderr  string
	}{
		{"malformed bind", func(s *fm.Server) string { return strings.Replace(s.Link(), fm.Bind, "oar_"+fm.Lease[5:], 1) }, true, true, "bind field"},
		{"production origin under the test override", func(s *fm.Server) string {
			return strings.Replace(s.Link(), s.Origin(), "https://openadapt.ai", 1)
		}, true, true, "origin field"},
		{"extra field", func(s *fm.Server) string { return s.Link() + "&x=1" }, true, true, "only the fields"},
		{"no terminal", (*fm.Server).Link, false, true, "controlling terminal"},
		{"no authoring session", (*fm.Server).Link, true, false, "openadapt_flow.authoring is not available with openadapt-flow 1.32.0; nothing was sent"},
		{"no Flow", (*fm.Server).Link, true, false, "openadapt-flow was not found: install openadapt-flow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var term mailbox.Terminal
			if tc.term {
				term = &scriptedTerminal{}
			}
			var sess authoring.Session
			if tc.session {
				sess = &recordingSession{}
			}
			srv := connectEnv(t, term, sess)
			if tc.name == "no Flow" {
				t.Setenv("PATH", t.TempDir()) // no openadapt-flow: the real opener cannot find Flow's Python
			} else if !tc.session {
				testOnlyOpenSession = func(context.Context, authoringOpts) (authoring.Session, func(), error) {
					return nil, nil, fmt.Errorf("%w with openadapt-flow 1.32.0", errNoAuthoringSession)
				}
			}
			code, stdout, stderr := runConnect(t, "", tc.link(srv))
			if code != 2 || stdout != "" || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests were sent", n)
			}
			if strings.Contains(stderr, fm.Bind[4:20]) {
				t.Errorf("stderr holds the bind token: %s", stderr)
			}
		})
	}
}

func TestAuthoringConnectServesAJob(t *testing.T) {
	term := &scriptedTerminal{}
	sess := &recordingSession{}
	srv := connectEnv(t, term, sess)
	srv.Poll(
		fm.Command(fm.Envelope("c1", "bind_pack", nil, fm.SubA, map[string]any{"client_display": "Claude"})),
		fm.Command(fm.Envelope("c2", "observe", nil, fm.SubA, nil)),
	)
	// The link comes on stdin ("-"), so it never appears in argv.
	code, stdout, stderr := runConnect(t, srv.Link()+"\n", "-")
	if code != 0 || stdout != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if strings.Join(sess.calls, ",") != "observe" || len(term.prompts) != 1 || term.prompts[0] != "Allow Claude to drive this job?" {
		t.Errorf("calls %v prompts %v", sess.calls, term.prompts)
	}
	if n := len(srv.Of("callback")); n != 3 {
		t.Errorf("%d callbacks, want 3 (allow, observe, halted)", n)
	}
	for _, s := range []string{fm.Bind[4:20], fm.Lease[5:20]} {
		if strings.Contains(stderr, s) {
			t.Errorf("stderr holds a secret:\n%s", stderr)
		}
	}
	if !strings.Contains(stderr, mailbox.BoundSentence) || !strings.Contains(stderr, "halted") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

func TestAuthoringConnectMailboxRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script func(*fm.Server)
		stderr string
	}{
		{"already claimed", func(s *fm.Server) { s.Script("claim", fm.Reply{Status: 409, Body: `{}`}) }, "already claimed"},
		{"expired", func(s *fm.Server) { s.Script("claim", fm.Reply{Status: 410, Body: `{}`}) }, "expired"},
		{"unknown job", func(s *fm.Server) { s.Script("poll", fm.Reply{Status: 404, Body: `{}`}) }, "does not know this job"},
		{"credential rejected", func(s *fm.Server) { s.Script("poll", fm.Reply{Status: 401, Body: `{}`}) }, "rejected the credential"},
		{"bad responses", func(s *fm.Server) {
			r := fm.Reply{Status: 200, Body: `{}`, NoStore: new(bool)}
			s.Script("poll", r, r, r)
		}, "3 of 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := connectEnv(t, &scriptedTerminal{}, &recordingSession{})
			tc.script(srv)
			code, _, stderr := runConnect(t, "", srv.Link())
			if code != 1 || !strings.Contains(stderr, tc.stderr) || !strings.Contains(stderr, "openadapt-agent: error: authoring connect:") {
				t.Fatalf("exit %d, stderr:\n%s", code, stderr)
			}
			if strings.Contains(stderr, fm.Lease[5:20]) || strings.Contains(stderr, srv.Origin()) {
				t.Errorf("stderr holds a secret or the URL:\n%s", stderr)
			}
		})
	}
}
