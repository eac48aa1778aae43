package serve

import "testing"

// TestProtocolEra2025 reruns the run, progress, idempotency and sweep tests
// in a 2025-11-25 session (the era production clients negotiate); the other
// tests run in the SDK's latest, 2026-07-28.
func TestProtocolEra2025(t *testing.T) {
	harnessEra = "2025-11-25"
	defer func() { harnessEra = "" }()
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
