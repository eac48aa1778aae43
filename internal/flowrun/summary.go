package flowrun

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// Summary is the public metric allowlist of a report (flow-run.md §6.3
// "Public metrics", mcp-surface.md §5.6 SUMMARY). A nil field is not
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
	r, ok := ParseObject(report)
	if !ok {
		return Summary{}
	}
	return summarizeObject(r)
}

func summarizeObject(r map[string]json.RawMessage) Summary {
	var s Summary
	var results []json.RawMessage
	if v, ok := r["results"]; ok && json.Unmarshal(v, &results) == nil && results != nil {
		total, okN, skipped := len(results), 0, 0
		for _, rr := range results {
			obj, ok := ParseObject(rr)
			if !ok {
				continue
			}
			if b, isBool := jsonBool(obj["ok"]); isBool && b {
				okN++
			}
			if b, isBool := jsonBool(obj["skipped"]); isBool && b {
				skipped++
			}
		}
		s.StepsTotal, s.StepsOK, s.StepsSkipped = &total, &okN, &skipped
	}
	s.HealCount = nonNegInt(r["heal_count"])
	s.ModelCalls = nonNegInt(r["model_calls"])
	if t := bytes.TrimSpace(r["total_ms"]); len(t) > 0 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		if f, err := strconv.ParseFloat(string(t), 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			s.TotalMS = &f
		}
	}
	if b, ok := jsonBool(r["screenshots_may_leave_box"]); ok {
		s.ScreenshotsMayLeaveBox = &b
	}
	return s
}

func nonNegInt(v json.RawMessage) *int64 {
	n := jsonInt(v)
	if n == nil || n.Sign() < 0 || !n.IsInt64() {
		return nil
	}
	x := n.Int64()
	return &x
}
