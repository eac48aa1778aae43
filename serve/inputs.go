package serve

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
)

// Typed inputs (docs/runs.md "Arguments"): each declared parameter is
// asked for with Flow's declared type, and every value is checked before
// anything starts. A refused value is named by its input and a closed
// problem code, never by its value; an undeclared key is never named.

// The problem codes of invalid_inputs that serve gives itself (the wire
// order is inputProblems'; a card's constraints give the others, named in
// internal/cards).
const (
	problemMissing      = "missing"
	problemUnknownInput = "unknown_input"
	problemWrongType    = "wrong_type"
	problemNotADate     = cards.ProblemNotADate
)

// number reports whether callers send p as a JSON number (Flow's type
// number); every other type is a string.
func (p param) number() bool { return p.typ == "number" }

// format is p's JSON Schema format: the card's, else "date" for Flow's
// date type, else "".
func (p param) format() string {
	if p.in != nil && p.in.Format != "" {
		return p.in.Format
	}
	if p.typ == "date" {
		return "date"
	}
	return ""
}

// description is p's description: the card's, else a fixed sentence.
func (p param) description() string {
	if p.in != nil && p.in.Description != "" {
		return p.in.Description
	}
	return "Value for the declared '" + p.wire + "' workflow parameter."
}

// schema is p's property in a run tool's input schema: the JSON type, its
// format, the card's constraints, then the description.
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
	if in := p.in; in != nil {
		if in.Enum != nil {
			parts := make([]string, len(in.Enum))
			for i, e := range in.Enum {
				parts[i] = jstr(e)
			}
			b.WriteString(`,"enum":[` + strings.Join(parts, ",") + `]`)
		}
		if in.Pattern != "" {
			b.WriteString(`,"pattern":` + jstr(in.Pattern))
		}
		if in.MinLength != nil {
			b.WriteString(`,"minLength":` + strconv.Itoa(*in.MinLength))
		}
		if in.MaxLength != nil {
			b.WriteString(`,"maxLength":` + strconv.Itoa(*in.MaxLength))
		}
		if in.Minimum != nil {
			b.WriteString(`,"minimum":` + in.MinimumText)
		}
		if in.Maximum != nil {
			b.WriteString(`,"maximum":` + in.MaximumText)
		}
	}
	b.WriteString(`,"description":` + jstr(p.description()) + `}`)
	return b.String()
}

// listType is p's type in a listing entry: the JSON type a run call sends.
func (p param) listType() string {
	if p.number() {
		return "number"
	}
	return "string"
}

// entry is p's listing entry: what its schema says, with the card's
// description only (the fixed sentence is left out).
func (p param) entry(required bool) paramEntry {
	e := paramEntry{Name: p.wire, Type: p.listType(), Required: required, Format: p.format()}
	if in := p.in; in != nil {
		e.Description, e.Enum, e.Pattern, e.MinLength, e.MaxLength = in.Description, in.Enum, in.Pattern, in.MinLength, in.MaxLength
		if in.Minimum != nil {
			e.Minimum = json.RawMessage(in.MinimumText)
		}
		if in.Maximum != nil {
			e.Maximum = json.RawMessage(in.MaximumText)
		}
	}
	return e
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
// problem code. The type first, then Flow's date, then the card's
// constraints (cards.Input.CheckString, CheckNumber).
func (p param) check(v any) (string, string) {
	if p.number() {
		n, ok := v.(json.Number)
		if !ok {
			return "", problemWrongType
		}
		if problem := p.in.CheckNumber(n.String()); problem != "" {
			return "", problem
		}
		return n.String(), ""
	}
	s, ok := v.(string)
	if !ok {
		return "", problemWrongType
	}
	if p.typ == "date" && !cards.CalendarDate(s) {
		return "", problemNotADate
	}
	if problem := p.in.CheckString(s); problem != "" {
		return "", problem
	}
	return s, ""
}
