package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// BenchmarkRealFlowEscalateMCP (BENCHMARKS.md "Flow helper and attended
// actions"): one escalate on a real durable pause (made in place with Flow's
// own objects by internal/flow/flowhelper/testdata/realflow/make_pause.py,
// no browser), measured side by side
// in one run at two levels, each a new idempotency key:
//   - helper: attended.act through the embedded helper into Flow's
//     execute_attended_action and back;
//   - mcp: the real binary's `serve --allow-attended-actions` over stdio,
//     escalate_attention from tools/call to its result, with the go-sdk
//     client answering the form elicitation at once (2025-11-25 era).
//
// Each reports the median of its iterations as median-ms. Needs
// OPENADAPT_REALFLOW_DIR.
func BenchmarkRealFlowEscalateMCP(b *testing.B) {
	rf := os.Getenv("OPENADAPT_REALFLOW_DIR")
	if rf == "" {
		b.Skip("cmd: real-Flow benchmark SKIPPED: set OPENADAPT_REALFLOW_DIR")
	}
	T, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home, runs := filepath.Join(T, "home"), filepath.Join(T, "runs")
	for _, d := range []string{home, runs, filepath.Join(T, "bundles")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	env := []string{"PATH=" + filepath.Join(rf, "bin") + ":" + os.Getenv("PATH"), "HOME=" + home,
		"OPENADAPT_DURABLE_AUTHORITY_DB=" + filepath.Join(T, "authority", "authority.sqlite3")}
	python := filepath.Join(rf, "bin", "flow-python")
	mk := exec.Command(python, "../internal/flow/flowhelper/testdata/realflow/make_pause.py", runs, "run-bench")
	mk.Env = env
	out, err := mk.Output()
	if err != nil {
		b.Fatalf("make_pause: %v", err)
	}
	var p struct {
		AttentionID      string `json:"attention_id"`
		CapabilityDigest string `json:"capability_digest"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		b.Fatalf("make_pause: %v %s", err, out)
	}
	bin := filepath.Join(T, "openadapt-agent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/OpenAdaptAI/openadapt-agent/cmd/openadapt-agent").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v %s", err, out)
	}
	op, err := flowhelper.Operator()
	if err != nil {
		b.Fatal(err)
	}
	median := func(b *testing.B, d []time.Duration) {
		slices.Sort(d)
		if len(d) > 0 {
			b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "median-ms")
		}
	}

	b.Run("helper", func(b *testing.B) {
		h, err := flowhelper.Start(context.Background(), flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: python},
			StateDir: filepath.Join(runs, ".openadapt-agent"), Instance: "bench-helper", Env: flowrun.ChildEnv(env, nil), Operator: op})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		var d []time.Duration
		for i := 0; b.Loop(); i++ {
			start := time.Now()
			dec, err := h.Act(context.Background(), flowhelper.ActRequest{RunsRoot: runs, AttentionID: p.AttentionID,
				CapabilityDigest: p.CapabilityDigest, IdempotencyKey: fmt.Sprintf("bench-helper-%08d", i), Action: "escalate",
				Disposition: "needs_assistance", DecidedBy: "automation", Operator: op})
			if err != nil || dec.Status != "escalated" {
				b.Fatalf("escalate %+v %v", dec, err)
			}
			d = append(d, time.Since(start))
		}
		median(b, d)
	})

	b.Run("mcp", func(b *testing.B) {
		cmd := exec.Command(bin, "serve", "--bundles", filepath.Join(T, "bundles"), "--runs-dir", runs,
			"--allow-attended-actions", "--flow-python", python)
		cmd.Env = env
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
			},
		}).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		var d []time.Duration
		for i := 0; b.Loop(); i++ {
			args := map[string]any{"attention_id": p.AttentionID, "capability_digest": p.CapabilityDigest,
				"idempotency_key": fmt.Sprintf("bench-mcp-%08d", i), "request_assistance": true}
			start := time.Now()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "escalate_attention", Arguments: args})
			d = append(d, time.Since(start))
			if err != nil || res.IsError {
				b.Fatalf("escalate_attention: %v %+v", err, res)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["status"] != "escalated" {
				b.Fatalf("escalate_attention: %+v", res.StructuredContent)
			}
		}
		median(b, d)
	})
}
