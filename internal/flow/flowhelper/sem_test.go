//go:build unix

package flowhelper_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

// TestInFlightLimit: Go keeps at most 8 requests in
// flight. Nine acts are started, each held by the fake once received; the
// one that finds every slot taken waits (the hook names it) and, when its
// context ends, returns unsent; the eight in flight fail with a transport
// error when the helper dies. Without the semaphore no request would ever wait.
func TestInFlightLimit(t *testing.T) {
	n := flowhelper.MaxInFlight + 1
	keys := make([]string, n)
	var rules []fakehelper.Rule
	for i := range keys {
		keys[i] = fmt.Sprintf("held-key-%012d", i)
		rules = append(rules, fakehelper.Rule{Op: "attended.act", Match: map[string]any{"idempotency_key": keys[i]}, WaitForKey: "never-answered-0001"})
	}
	f := newFake(t, "", rules...)
	h := f.start(t)
	waiting := make(chan string, n)
	flowhelper.SetSemWaitHook(t, func(op string, fields any) {
		if r, ok := fields.(flowhelper.ActRequest); ok {
			waiting <- r.IdempotencyKey
		}
	})
	cancels := map[string]context.CancelFunc{}
	errs := map[string]chan error{}
	for _, k := range keys {
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan error, 1)
		cancels[k], errs[k] = cancel, ch
		go func() { _, err := h.Act(ctx, f.act("escalate", k)); ch <- err }()
	}
	var blocked string
	select {
	case blocked = <-waiting:
	case <-time.After(60 * time.Second):
		t.Fatal("no request waited for a slot: more than 8 in flight")
	}
	cancels[blocked]()
	if err := <-errs[blocked]; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiting request: %v", err)
	}
	killHelper(t, h)
	for _, k := range keys {
		if k == blocked {
			continue
		}
		// Held by the fake, or still waiting to write when the helper
		// died: a transport failure either way.
		err := <-errs[k]
		var te *flowhelper.TransportError
		if !errors.As(err, &te) {
			t.Fatalf("in-flight act %s: %v", k, err)
		}
		cancels[k]()
	}
	for _, r := range fakehelper.Requests(t, f.record) {
		if r["idempotency_key"] == blocked {
			t.Fatal("the waiting request was written")
		}
	}
}

// killHelper SIGKILLs the helper's process group (a crash).
func killHelper(t *testing.T, h *flowhelper.Helper) {
	t.Helper()
	if err := syscall.Kill(-h.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.Done()
}
