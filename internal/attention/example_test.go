package attention_test

import (
	"fmt"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// Attention ids hash the run directory's path relative to the runs root.
func ExampleID() {
	fmt.Println(attention.ID("run-0001"))
	fmt.Println(attention.ID("nightly/run-0005"))
	// Output:
	// 302aa61015d20d93ce981a9d
	// 496ca53a312c80b0927cb811
}

// The queue over Flow's sample runs root, newest first.
func ExampleList() {
	for _, it := range attention.List("../../testdata/flow/attended/runs") {
		fmt.Println(it.ID, *it.CreatedAt, it.Category, it.Status, it.DurablyPaused)
	}
	// Output:
	// 7d494ff8143cc27f39a86a58 2026-07-28T00:00:04+00:00 operator_review completed_unverified false
	// 900970c9f4fd84e7acc9959e 2026-07-28T00:00:00+00:00 operator_review halted false
	// 496ca53a312c80b0927cb811 2026-07-27T23:59:59+00:00 human_required halted false
	// 302aa61015d20d93ce981a9d 2026-07-18T12:00:00+00:00 human_required pending true
}
