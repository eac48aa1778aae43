package cmd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring/mailbox"
)

// endlessInput is stdin that never ends a line: it counts what was read
// and gives up after stop bytes (so a reader without a bound fails the
// test instead of eating the machine).
type endlessInput struct {
	read atomic.Int64
	stop int64
}

func (e *endlessInput) Read(p []byte) (int, error) {
	if e.read.Load() >= e.stop {
		return 0, errors.New("endless input: read far beyond the link limit")
	}
	for i := range p {
		p[i] = 'a'
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// TestAuthoringConnectStdinBounded: `authoring connect -` reads at most the
// link limit plus one byte of a line that never ends, and refuses it as a
// usage error naming the limit.
func TestAuthoringConnectStdinBounded(t *testing.T) {
	t.Parallel()
	in := &endlessInput{stop: 64 << 20}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"authoring", "connect", "-"}, in, &out, &errb)
	if n := in.read.Load(); n > mailbox.MaxLinkBytes+1 {
		t.Fatalf("read %d bytes of stdin, want at most %d", n, mailbox.MaxLinkBytes+1)
	}
	if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "2048") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// signalingReader blocks every Read until it is closed, and says when the
// first Read began.
type signalingReader struct {
	r       *io.PipeReader
	reading chan struct{}
	once    atomic.Bool
}

func (s *signalingReader) Read(p []byte) (int, error) {
	if s.once.CompareAndSwap(false, true) {
		close(s.reading)
	}
	return s.r.Read(p)
}

// TestAuthoringConnectStdinCanceled: a signal (the command's context
// canceled) while `authoring connect -` waits for the link on stdin ends
// the command at once, as interrupted.
func TestAuthoringConnectStdinCanceled(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	in := &signalingReader{r: pr, reading: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"authoring", "connect", "-"}, in, &out, &errb) }()
	<-in.reading
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "reading the runner link from stdin: context canceled") {
			t.Fatalf("exit %d, stderr %q", code, errb.String())
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("authoring connect - kept reading stdin after its context was canceled")
	}
}

func TestReadLinkLine(t *testing.T) {
	t.Parallel()
	link := strings.Repeat("l", 10)
	for in, want := range map[string]string{
		link + "\n":                    link,
		link + "\r\n" + "more\n":       link,
		link:                           link,
		"\n":                           "",
		strings.Repeat("x", 10) + "\r": strings.Repeat("x", 10), // the limit, then "\r": the "\n" is never read
		strings.Repeat("y", 11) + "\n": strings.Repeat("y", 11), // cut at limit+1: the link check refuses it
	} {
		got, err := readLinkLine(context.Background(), strings.NewReader(in), 10)
		if err != nil || got != want {
			t.Errorf("readLinkLine(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := readLinkLine(context.Background(), strings.NewReader(""), 10); err == nil || !strings.Contains(err.Error(), "nothing was read") {
		t.Errorf("empty stdin: %v", err)
	}
}
