package cmd

import (
	"bytes"
	"errors"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// TestReportDecision: the terminal's message for every kind of result.
func TestReportDecision(t *testing.T) {
	t.Parallel()
	const key = "attention-cli-0123456789abcdef"
	decided := func(status string) attention.Result {
		return attention.Result{Kind: attention.Decided, Decision: flowhelper.Decision{DecisionID: "0123456789abcdef0123456789abcdef", Action: "reject", Status: status}}
	}
	const (
		refused   = "openadapt-agent: error: Flow refused the reject; nothing was done (details in the protected local log)\n"
		uncertain = "openadapt-agent: error: delivery of the reject is uncertain (idempotency key " + key + "); do not retry: run `openadapt-agent attention reconcile` for this item\n"
	)
	for _, tc := range []struct {
		name     string
		res      attention.Result
		out, err string
		ok       bool
	}{
		{"rejected", decided("rejected"), "decision 0123456789abcdef0123456789abcdef: rejected (idempotency key " + key + ")\n", "", true},
		{"halted", decided("halted"), "decision 0123456789abcdef0123456789abcdef: halted (idempotency key " + key + ")\n", "", false},
		{"refused status", decided("refused"), "decision 0123456789abcdef0123456789abcdef: refused (idempotency key " + key + ")\n", "", false},
		{"not found", attention.Result{Kind: attention.NotFound}, "", "openadapt-agent: error: no current Needs Attention item has that id\n", false},
		{"not allowed", attention.Result{Kind: attention.NotAllowed}, "", "openadapt-agent: error: the current capability does not allow reject\n", false},
		{"stale", attention.Result{Kind: attention.Stale}, "", "openadapt-agent: error: the item changed while you confirmed; nothing was dispatched; list it again\n", false},
		{"refused", attention.Result{Kind: attention.Refused}, "", refused, false},
		{"operator refused", attention.Result{Kind: attention.OperatorRefused}, "", refused, false},
		{"pause not found", attention.Result{Kind: attention.PauseNotFound}, "", refused, false},
		{"busy", attention.Result{Kind: attention.Busy}, "", refused, false},
		{"failed", attention.Result{Kind: attention.Failed}, "", "openadapt-agent: error: the reject could not be dispatched; nothing was done (details in the protected local log)\n", false},
		{"failed after dispatch", attention.Result{Kind: attention.Failed, Dispatched: true}, "", uncertain, false},
		{"unavailable", attention.Result{Kind: attention.Unavailable}, "", "openadapt-agent: error: the Flow helper stopped before the reject was sent; nothing was done\n", false},
		{"uncertain", attention.Result{Kind: attention.Uncertain}, "", uncertain, false},
		{"malformed", attention.Result{Kind: attention.Malformed}, "", uncertain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errb bytes.Buffer
			err := reportDecision(&IO{Out: &out, Err: &errb}, "reject", key, tc.res)
			if out.String() != tc.out || errb.String() != tc.err {
				t.Errorf("stdout %q stderr %q, want %q %q", out.String(), errb.String(), tc.out, tc.err)
			}
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, errCheckFailed)) {
				t.Errorf("err = %v", err)
			}
		})
	}
}
