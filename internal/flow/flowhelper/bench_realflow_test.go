package flowhelper_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// Benchmarks against real Flow (BENCHMARKS.md "Flow helper"): skip
// without OPENADAPT_REALFLOW_DIR. Each reports the median of its
// iterations as median-ms.

func reportMedian(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	if len(d) > 0 {
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, "median-ms")
	}
}

// BenchmarkRealFlowHelperStart: spawn to a checked hello (staging, Python
// start, the version-pinned Flow import, capability probes).
func BenchmarkRealFlowHelperStart(b *testing.B) {
	if theRealFlow == nil {
		b.Skip(realFlowSkip)
	}
	e := newRFEnvB(b)
	op, _ := flowhelper.Operator()
	var d []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		h, err := flowhelper.Start(context.Background(), flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: theRealFlow.FlowPython},
			StateDir: e.state, Instance: fmt.Sprintf("bench-%d", i), Env: e.env, Operator: op})
		if err != nil {
			b.Fatal(err)
		}
		d = append(d, time.Since(start))
		h.Close()
	}
	reportMedian(b, d)
}

// BenchmarkRealFlowEscalate: one escalate through the helper into Flow's
// execute_attended_action and back (a new key each time, so Flow journals
// a new decision).
func BenchmarkRealFlowEscalate(b *testing.B) {
	if theRealFlow == nil {
		b.Skip(realFlowSkip)
	}
	e := newRFEnvB(b)
	p := e.pause(b)
	op, _ := flowhelper.Operator()
	h, err := flowhelper.Start(context.Background(), flowhelper.Config{Interpreter: flowhelper.Interpreter{Path: theRealFlow.FlowPython},
		StateDir: e.state, Instance: "bench-esc", Env: e.env, Operator: op})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	var d []time.Duration
	for i := 0; b.Loop(); i++ {
		req := flowhelper.ActRequest{RunsRoot: e.runs, AttentionID: p.AttentionID, CapabilityDigest: p.CapabilityDigest,
			IdempotencyKey: fmt.Sprintf("bench-escalate-%08d", i), Action: "escalate", Disposition: "needs_assistance", DecidedBy: "automation", Operator: op}
		start := time.Now()
		dec, err := h.Act(context.Background(), req)
		if err != nil || dec.Status != "escalated" {
			b.Fatalf("escalate %+v %v", dec, err)
		}
		d = append(d, time.Since(start))
	}
	reportMedian(b, d)
}
