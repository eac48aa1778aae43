//go:build unix

package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

// TestAttendedProgressWhileDispatched: while
// attended.act is in flight and the call carries a progress token, the
// server sends "Attended action in progress." (the confirmation wait has
// its own text). The fake holds the act until the test answers another
// request, so the progress is seen during the wait, then the decision.
func TestAttendedProgressWhileDispatched(t *testing.T) {
	testOnlyProgressEvery = 2 * time.Millisecond
	t.Cleanup(func() { testOnlyProgressEvery = 0 })
	const held, release = "progress-key-0000001", "release-key-00000001"
	a := newAttEnv(t, "", fakehelper.Rule{Op: "attended.act", Match: map[string]any{"idempotency_key": held}, WaitForKey: release,
		Reply: json.RawMessage(`{"decision":{"decision_id":"` + strings.Repeat("c", 32) + `","action":"escalate","status":"escalated","message":"m","report_success":null,"next_transition":null,"transition_receipt_digest":null}}`)})
	srv, err := New(a.opts(), &syncBuffer{})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	inProgress := make(chan struct{}, 1)
	var messages = make(chan string, 1000)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return accept(r) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case messages <- r.Params.Message:
			default:
			}
			if r.Params.Message == "Attended action in progress." {
				select {
				case inProgress <- struct{}{}:
				default:
				}
			}
		},
	}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait(); srv.Close() })
	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "escalate_attention", Arguments: a.args(held, "request_assistance", true)}
		p.SetProgressToken("tok-1")
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Error(err)
		}
		result <- res
	}()
	select {
	case <-inProgress:
	case res := <-result:
		t.Fatalf("the call ended without progress during the dispatch: %+v", res)
	case <-time.After(60 * time.Second):
		t.Fatal("no progress while the act was in flight")
	}
	// Answer the release key; the fake then answers the held act.
	if _, err := srv.helper.h.Act(ctx, flowhelper.ActRequest{RunsRoot: a.runsDir, AttentionID: a.item.ID, CapabilityDigest: a.item.Capability.Digest,
		IdempotencyKey: release, Action: "escalate", Disposition: "needs_assistance", DecidedBy: "automation", Operator: srv.helper.h.Operator()}); err != nil {
		t.Fatal(err)
	}
	res := <-result
	if sc, _ := res.StructuredContent.(map[string]any); sc["status"] != "escalated" {
		t.Fatalf("result %+v", res.StructuredContent)
	}
	for {
		select {
		case m := <-messages:
			if m != "Attended action in progress." && m != "Waiting for the local operator's confirmation." {
				t.Errorf("progress message %q", m)
			}
		default:
			return
		}
	}
}
