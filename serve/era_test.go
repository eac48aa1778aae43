package serve

import "testing"

// TestProtocolEra2025 reruns the run, progress, idempotency, sweep and audit
// tests in a 2025-11-25 session (the era production clients negotiate; see
// harnessEra), all in parallel; the other tests run in the SDK's latest,
// 2026-07-28. The outcomes rerun takes one case per status (TestRunOutcomes).
func TestProtocolEra2025(t *testing.T) {
	t.Parallel()
	t.Run("outcomes", TestRunOutcomes)
	t.Run("progress", TestLongRunProgressAndWait)
	t.Run("idempotency", TestIdempotency)
	t.Run("sweep", TestCanarySweep)
	t.Run("audit", TestAuditLog)
	t.Run("identity", func(t *testing.T) {
		e := newEnv(t)
		e.demo("demo", testBundle{salt: "era"})
		s := start(t, e.opts())
		if v := s.cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Fatalf("negotiated %s", v)
		}
	})
}
