package serve

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Typed inputs (docs/runs.md "Arguments"): each declared parameter is
// asked for with Flow's declared type, and every value is checked before
// anything starts. A refused value is named by its input and a closed
// problem code, never by its value; an undeclared key is never named.

// The problem codes of invalid_inputs (the wire order is inputProblems').
const (
	problemMissing      = "missing"
	problemUnknownInput = "unknown_input"
	problemWrongType    = "wrong_type"
	problemNotADate     = "not_a_date"
	problemNotAllowed   = "not_allowed"
	problemTooShort     = "too_short"
	problemTooLong      = "too_long"
	problemPattern      = "pattern"
	problemBelowMinimum = "below_minimum"
	problemAboveMaximum = "above_maximum"
)

// number reports whether callers send p as a JSON number (Flow's type
// number); every other type is a string.
func (p param) number() bool { return p.typ == "number" }

// format is p's JSON Schema format: "date" for Flow's date type, else "".
func (p param) format() string {
	if p.typ == "date" {
		return "date"
	}
	return ""
}

// schema is p's property in a run tool's input schema: the JSON type, its
// format, then the description.
func (p param) schema() string {
	var b strings.Builder
	if p.number() {
		b.WriteString(`{"type":"number"`)
	} else {
		b.WriteString(`{"type":"string"`)
	}
	if f := p.format(); f != "" {
		b.WriteString(`,"format":` + jstr(f))
	}
	b.WriteString(`,"description":` + jstr("Value for the declared '"+p.wire+"' workflow parameter.") + `}`)
	return b.String()
}

// listType is p's type in a listing entry: the JSON type a run call sends.
func (p param) listType() string {
	if p.number() {
		return "number"
	}
	return "string"
}

// checkInputs checks the workflow inputs flat of a run call against the
// declared parameters ps (docs/runs.md "Arguments"). It returns the values
// for the parameters file, keyed by Flow's names (a number as the caller's
// JSON token), or the problems: an undeclared key first (once, whatever
// their number, never naming one), then one problem per declared input in
// order of its wire name. Every declared input is required unless
// requireAll is false (synthetic recorded defaults).
func checkInputs(ps []param, flat map[string]any, requireAll bool) (map[string]string, []inputProblem) {
	values := make(map[string]string, len(flat))
	var problems []inputProblem
	byWire := make(map[string]bool, len(ps))
	for _, p := range ps {
		byWire[p.wire] = true
	}
	for k := range flat {
		if !byWire[k] {
			problems = append(problems, inputProblem{Problem: problemUnknownInput})
			break
		}
	}
	sorted := slices.Clone(ps)
	slices.SortFunc(sorted, func(a, b param) int { return strings.Compare(a.wire, b.wire) })
	for _, p := range sorted {
		v, has := flat[p.wire]
		if !has {
			if requireAll {
				problems = append(problems, inputProblem{Input: p.wire, Problem: problemMissing})
			}
			continue
		}
		text, problem := p.check(v)
		if problem != "" {
			problems = append(problems, inputProblem{Input: p.wire, Problem: problem})
			continue
		}
		values[p.flow] = text
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return values, nil
}

// check checks one value of p: its text for the parameters file, or a
// problem code.
func (p param) check(v any) (string, string) {
	if p.number() {
		n, ok := v.(json.Number)
		if !ok {
			return "", problemWrongType
		}
		return n.String(), ""
	}
	s, ok := v.(string)
	if !ok {
		return "", problemWrongType
	}
	if p.format() == "date" && !calendarDate(s) {
		return "", problemNotADate
	}
	return s, ""
}

// calendarDate reports whether s is a real calendar date written
// YYYY-MM-DD, year 0001 to 9999 (Python's date.fromisoformat range, which
// Flow parses dates with).
func calendarDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	if y, _ := strconv.Atoi(s[:4]); y < 1 {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}
