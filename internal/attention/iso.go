package attention

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// normalizeISO reproduces Python's
// datetime.fromisoformat(s.replace("Z", "+00:00")).isoformat() for the
// extended ISO 8601 forms Flow writes and Python 3.11 accepts:
//
//	YYYY-MM-DD[<sep>HH[:MM[:SS[(.|,)f…]]]][Z|±HH[:MM[:SS[.f…]]]]
//
// with any single separator character, fractions truncated to microseconds,
// and the basic forms YYYYMMDD / HHMMSS / ±HHMM. The output is
// YYYY-MM-DDTHH:MM:SS[.ffffff][±HH:MM[:SS[.ffffff]]] (microseconds only when
// non-zero). ok is false for anything Python would reject. It is stricter
// than CPython on malformed input that CPython's C parser tolerates (e.g.
// "12:00:080", "12:00:00.Z", week dates); Flow writes started_at with
// isoformat(), where both agree (testdata/iso_cases.json was produced by
// CPython 3.11.7).
func normalizeISO(s string) (string, bool) {
	s = strings.ReplaceAll(s, "Z", "+00:00")
	var datePart, rest string
	switch {
	case len(s) >= 10 && s[4] == '-':
		datePart, rest = s[:10], s[10:]
		if datePart[7] != '-' {
			return "", false
		}
		datePart = datePart[:4] + datePart[5:7] + datePart[8:10]
	case len(s) >= 8:
		datePart, rest = s[:8], s[8:]
	default:
		return "", false
	}
	if !allDigits(datePart) {
		return "", false
	}
	y, _ := strconv.Atoi(datePart[:4])
	mo, _ := strconv.Atoi(datePart[4:6])
	d, _ := strconv.Atoi(datePart[6:8])
	if y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return "", false
	}
	out := fmt.Sprintf("%04d-%02d-%02d", y, mo, d)
	if rest == "" {
		return out + "T00:00:00", true
	}
	// One separator character (Python 3.11 accepts any single character).
	_, size := utf8.DecodeRuneInString(rest)
	rest = rest[size:]
	timePart, tz := rest, ""
	if i := strings.IndexAny(rest, "+-"); i >= 0 {
		timePart, tz = rest[:i], rest[i:]
	}
	h, mi, sec, us, ok := parseClock(timePart, ".,")
	if !ok || h > 23 || mi > 59 || sec > 59 {
		return "", false
	}
	out += fmt.Sprintf("T%02d:%02d:%02d", h, mi, sec)
	if us != 0 {
		out += fmt.Sprintf(".%06d", us)
	}
	if tz == "" {
		return out, true
	}
	sign := tz[0]
	oh, om, os, ous, ok := parseClock(tz[1:], ".")
	if !ok || om > 59 || os > 59 {
		return "", false
	}
	off := time.Duration(oh)*time.Hour + time.Duration(om)*time.Minute + time.Duration(os)*time.Second + time.Duration(ous)*time.Microsecond
	if off >= 24*time.Hour {
		return "", false
	}
	if off == 0 {
		sign = '+'
	}
	out += fmt.Sprintf("%c%02d:%02d", sign, oh, om)
	if os != 0 || ous != 0 {
		out += fmt.Sprintf(":%02d", os)
		if ous != 0 {
			out += fmt.Sprintf(".%06d", ous)
		}
	}
	return out, true
}

// parseClock parses HH[:MM[:SS[(.|,)f…]]] or the basic HH[MM[SS[.f…]]].
// UTC offsets use the same grammar with only "." before a fraction.
func parseClock(s, fractionMarks string) (h, m, sec, us int, ok bool) {
	if s == "" {
		return 0, 0, 0, 0, false
	}
	frac := ""
	if i := strings.IndexAny(s, fractionMarks); i >= 0 {
		s, frac = s[:i], s[i+1:]
		if frac == "" || !allDigits(frac) {
			return 0, 0, 0, 0, false
		}
	}
	var fields []string
	if strings.Contains(s, ":") {
		fields = strings.Split(s, ":")
	} else {
		for i := 0; i < len(s); i += 2 {
			if i+2 > len(s) {
				return 0, 0, 0, 0, false
			}
			fields = append(fields, s[i:i+2])
		}
	}
	if len(fields) == 0 || len(fields) > 3 {
		return 0, 0, 0, 0, false
	}
	vals := [3]int{}
	for i, f := range fields {
		if len(f) != 2 || !allDigits(f) {
			return 0, 0, 0, 0, false
		}
		vals[i], _ = strconv.Atoi(f)
	}
	if frac != "" {
		if len(fields) != 3 {
			return 0, 0, 0, 0, false
		}
		if len(frac) > 6 {
			frac = frac[:6]
		}
		frac += strings.Repeat("0", 6-len(frac))
		us, _ = strconv.Atoi(frac)
	}
	return vals[0], vals[1], vals[2], us, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
