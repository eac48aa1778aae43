package authoring

import (
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// The PHI filter for labels (node names, automation ids, control types,
// class names, coach hints). It is the Python authoring wire's _safe_label,
// the stricter of the sources: a label passes only when, after collapsing
// whitespace, it matches openadapt-types' label pattern
// ^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$ and holds no URL, no "@", no run of six
// or more digits, and nothing shaped like an e-mail address, a US SSN or a
// phone number. A label that fails is dropped, never repaired.
var (
	labelRE       = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9 ._-]{0,79}$`)
	processNameRE = lazyre.New(`^[A-Za-z0-9 ._-]{1,64}$`)
	sixDigitsRE   = lazyre.New(`[0-9]{6,}`)
	emailRE       = lazyre.New(`[^@\s]+@[^@\s]+\.[^@\s]+`)
	ssnRE         = lazyre.New(`\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b`)
	phoneRE       = lazyre.New(`\b(?:\+?[0-9][0-9\-\s().]{7,}[0-9])\b`)
)

// collapse joins the whitespace-separated fields of s with single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// SafeLabel returns the label that may cross a wire for v, or "" when v is
// not a string or fails the PHI filter.
func SafeLabel(v any) string {
	s, ok := v.(string)
	if !ok || len(s) > 4096 {
		return ""
	}
	c := collapse(s)
	if c == "" || len(c) > 80 || !labelRE().MatchString(c) {
		return ""
	}
	if strings.Contains(c, "://") || strings.Contains(c, "@") || sixDigitsRE().MatchString(c) ||
		emailRE().MatchString(c) || ssnRE().MatchString(c) || phoneRE().MatchString(c) {
		return ""
	}
	return c
}

// safeProcessName is the window's process name: ^[A-Za-z0-9 ._-]{1,64}$
// after collapsing whitespace, with the same digit, e-mail and phone checks
// as labels.
func safeProcessName(v any) string {
	s, ok := v.(string)
	if !ok || len(s) > 4096 {
		return ""
	}
	c := collapse(s)
	if !processNameRE().MatchString(c) || sixDigitsRE().MatchString(c) || phoneRE().MatchString(c) {
		return ""
	}
	return c
}
