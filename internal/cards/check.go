package cards

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// The problem codes of a refused input value (docs/runs.md, Typed
// inputs) that a card's constraints give.
const (
	ProblemNotADate     = "not_a_date"
	ProblemNotAllowed   = "not_allowed"
	ProblemTooShort     = "too_short"
	ProblemTooLong      = "too_long"
	ProblemPattern      = "pattern"
	ProblemBelowMinimum = "below_minimum"
	ProblemAboveMaximum = "above_maximum"
)

// CheckString checks a text value against the card's constraints, in this
// order: format, enum, minLength, maxLength, pattern. It returns the first
// problem code, or "". A nil Input accepts everything.
func (in *Input) CheckString(s string) string {
	if in == nil {
		return ""
	}
	switch in.Format {
	case "date":
		if !CalendarDate(s) {
			return ProblemNotADate
		}
	case "date-time":
		if !DateTime(s) {
			return ProblemNotADate
		}
	}
	if in.Enum != nil && !contains(in.Enum, s) {
		return ProblemNotAllowed
	}
	n := -1
	if in.MinLength != nil || in.MaxLength != nil {
		n = utf8.RuneCountInString(s)
	}
	if in.MinLength != nil && n < *in.MinLength {
		return ProblemTooShort
	}
	if in.MaxLength != nil && n > *in.MaxLength {
		return ProblemTooLong
	}
	if in.re != nil && !in.re.MatchString(s) {
		return ProblemPattern
	}
	return ""
}

// CheckNumber checks a JSON number token against the card's minimum and
// maximum, compared as IEEE doubles (as a JSON Schema validator does; a
// token beyond the double range is ±infinity). A nil Input accepts
// everything.
func (in *Input) CheckNumber(token string) string {
	if in == nil || in.Minimum == nil && in.Maximum == nil {
		return ""
	}
	// A JSON number token only fails to parse by overflow (±Inf, the
	// value compared) or underflow (±0).
	x, _ := strconv.ParseFloat(token, 64)
	if in.Minimum != nil && x < *in.Minimum {
		return ProblemBelowMinimum
	}
	if in.Maximum != nil && x > *in.Maximum {
		return ProblemAboveMaximum
	}
	return ""
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// CalendarDate reports whether s is a real calendar date written
// YYYY-MM-DD, from year 0001 (Python's date.fromisoformat range; Flow
// parses dates with Python).
func CalendarDate(s string) bool {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if i != 4 && i != 7 && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	if s[:4] == "0000" {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// DateTime reports whether s is an RFC 3339 date and time
// (2026-10-08T09:30:00Z, an offset, optional fractional seconds), on a real
// calendar date from year 0001.
func DateTime(s string) bool {
	if len(s) < 20 || !CalendarDate(s[:10]) || (s[10] != 'T' && s[10] != 't') {
		return false
	}
	norm := s[:10] + "T" + s[11:]
	if c := norm[len(norm)-1]; c == 'z' {
		norm = norm[:len(norm)-1] + "Z"
	}
	_, err := time.Parse(time.RFC3339Nano, norm)
	return err == nil
}
