package ledger_test

import (
	"context"
	"fmt"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// Verify the embedded snapshot of OpenAdapt's published ledgers offline.
func ExampleVerifier_Verify() {
	v, err := ledger.NewVerifier(ledger.DefaultTrust(), ledger.WithAt(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		panic(err)
	}
	res, err := v.Verify(context.Background(), ledger.Embedded())
	if err != nil {
		panic(err)
	}
	for _, t := range res.Targets[:2] {
		fmt.Println(t.Target, t.Verdict)
	}
	fmt.Println(res.Product.Verdict, res.Integrity, res.ExitCode)
	// Output:
	// agent active
	// capture not_active
	// not_production incomplete 0
}

// serve's admission gate: one call per run start.
func ExampleCheckWorkflowAdmission() {
	d, err := ledger.CheckWorkflowAdmission(context.Background(), ledger.Embedded(),
		"sha256:1111111111111111111111111111111111111111111111111111111111111111", "", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err) // treat as not admitted (unverifiable)
	}
	fmt.Println(d.Admitted(), d.ReasonCode())
	// Output: false unverifiable
}
