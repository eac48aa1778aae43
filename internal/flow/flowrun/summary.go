package flowrun

import (
	"math"
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Summary is the public metric allowlist of a report (docs/runs.md,
// "Projections"). A nil field is not
// derivable and is omitted from JSON. Nothing else of a report may leave the
// machine.
type Summary struct {
	StepsTotal             *int     `json:"steps_total,omitempty"`
	StepsOK                *int     `json:"steps_ok,omitempty"`
	StepsSkipped           *int     `json:"steps_skipped,omitempty"`
	HealCount              *int64   `json:"heal_count,omitempty"`
	ModelCalls             *int64   `json:"model_calls,omitempty"`
	TotalMS                *float64 `json:"total_ms,omitempty"`
	ScreenshotsMayLeaveBox *bool    `json:"screenshots_may_leave_box,omitempty"`
}

// summarize derives the [Summary] of a report.json body:
//   - steps_total: the length of results, if it is an array;
//   - steps_ok / steps_skipped: results whose ok / skipped is exactly true;
//   - heal_count, model_calls: copied when a non-negative integer literal
//     (booleans and floats never count);
//   - total_ms: copied when a non-negative finite number;
//   - screenshots_may_leave_box: copied when a boolean.
//
// A body that is not a JSON object gives the empty Summary.
func summarize(report []byte) Summary {
	d, ok := ParseObject(report)
	if !ok {
		return Summary{}
	}
	return summarizeObject(d)
}

func summarizeObject(d *pyjson.Doc) Summary {
	r := d.Root()
	var s Summary
	if results := d.Get(r, "results"); d.Kind(results) == pyjson.Array {
		total, okN, skipped := d.Len(results), 0, 0
		for res := range d.Elems(results) {
			// A non-object has no members: it counts towards the total only.
			if d.True(d.Get(res, "ok")) {
				okN++
			}
			if d.True(d.Get(res, "skipped")) {
				skipped++
			}
		}
		s.StepsTotal, s.StepsOK, s.StepsSkipped = &total, &okN, &skipped
	}
	if n, ok := nonNegInt(d, d.Get(r, "heal_count")); ok {
		s.HealCount = &n
	}
	if n, ok := nonNegInt(d, d.Get(r, "model_calls")); ok {
		s.ModelCalls = &n
	}
	if v := d.Get(r, "total_ms"); d.Kind(v) == pyjson.Number {
		if f, err := strconv.ParseFloat(string(d.Bytes(v)), 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			s.TotalMS = &f
		}
	}
	if v := d.Get(r, "screenshots_may_leave_box"); isBool(d, v) {
		b := d.True(v)
		s.ScreenshotsMayLeaveBox = &b
	}
	return s
}
