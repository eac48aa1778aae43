package cmd

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestBackstop drives the signal backstop with fake time: the first signal
// cancels the command's context at once; the process is exited (after the
// pending temporaries were removed) when the grace runs out or on a second
// signal, with 128+signal; serve and the child-running commands get their
// stated longer grace.
func TestBackstop(t *testing.T) {
	type outcome struct {
		code     int
		canceled time.Duration // since the signal
		exited   time.Duration
		cleaned  bool
		stderr   string
	}
	run := func(t *testing.T, grace time.Duration, second os.Signal) outcome {
		var o outcome
		synctest.Test(t, func(t *testing.T) {
			g := new(atomic.Int64)
			g.Store(int64(grace))
			sigs := make(chan os.Signal, 2)
			ctx, cancel := context.WithCancel(context.Background())
			var stderr bytes.Buffer
			exited := make(chan struct{})
			start := time.Now()
			env := backstopEnv{
				stderr:  &stderr,
				after:   time.After,
				cleanup: func() int { o.cleaned = true; return 2 },
				exit:    func(c int) { o.code, o.exited = c, time.Since(start); close(exited) },
				grace:   g,
			}
			go backstop(sigs, cancel, env)
			sigs <- syscall.SIGTERM
			<-ctx.Done()
			o.canceled = time.Since(start)
			if second != nil {
				sigs <- second
			}
			<-exited
			o.stderr = stderr.String()
		})
		return o
	}
	o := run(t, 0, nil)
	if o.canceled != 0 || o.exited != time.Second || o.code != 128+15 || !o.cleaned ||
		!strings.Contains(o.stderr, "interrupted by SIGTERM (did not stop within 1s); exiting, 2 temporary files removed") {
		t.Errorf("grace: %+v", o)
	}
	o = run(t, 0, os.Interrupt)
	if o.exited != 0 || o.code != 128+2 || !o.cleaned || !strings.Contains(o.stderr, "interrupted by SIGINT (second signal)") {
		t.Errorf("second signal: %+v", o)
	}
	o = run(t, 5*time.Second, nil)
	if o.exited != 5*time.Second || o.code != 143 {
		t.Errorf("serve's grace: %+v", o)
	}

	// A command that returned normally: the signal channel is closed, no exit.
	sigs := make(chan os.Signal)
	close(sigs)
	backstop(sigs, func() {}, backstopEnv{exit: func(int) { t.Error("exit without a signal") }, grace: new(atomic.Int64)})
}

// TestChildGrace: serve, and the commands that stop child process groups
// with flowrun's 2 s cancel grace, get a longer backstop than the 1 s of
// every other command.
func TestChildGrace(t *testing.T) {
	root := newRootCmd(&IO{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}})
	for path, want := range map[string]time.Duration{
		"serve": 5 * time.Second, "tutorial prepare": 3 * time.Second, "skill emit": 3 * time.Second,
		"attention list": 3 * time.Second, "bundle verify": 0, "ledger verify": 0, "skill verify": 0,
	} {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || commandName(c) != path {
			t.Fatalf("%s: %v %q", path, err, commandName(c))
		}
		if got := graceFor(c); got != want {
			t.Errorf("%s: grace %v, want %v", path, got, want)
		}
	}
}
