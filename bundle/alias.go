package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Parameter aliases (docs/bundle.md, Parameter aliases). MCP hosts refuse
// tool property names outside ^[A-Za-z0-9_.-]{1,64}$, but Flow accepts any
// parameter name. A name outside that rule is served under a stable ASCII
// alias derived from the name alone; the alias is mapped back to Flow's
// name only when the parameters file is written. Names inside the rule are
// never aliased.

// aliasMaxStem bounds the transliterated part of an alias, in bytes (all
// ASCII), before the hash suffix.
const aliasMaxStem = 48

// ParamAlias returns the alias of a parameter name outside serve's name
// rule: NFKD, every character of Unicode category M dropped, lower-cased,
// every run of characters outside [a-z0-9] turned into one "_", "_" trimmed
// from both ends, cut to 48 bytes ("p" when nothing is left), then "_" and
// the first 6 hex digits of the SHA-256 of the name's UTF-8 bytes. It is
// defined for every name (tests and `bundle inspect` show it); serve uses
// it only through [WireName].
func ParamAlias(name string) string {
	var b strings.Builder
	gap := false
	for _, r := range norm.NFKD.String(name) {
		if unicode.Is(unicode.M, r) {
			continue
		}
		r = unicode.ToLower(r)
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	// Leading runs were never written and a trailing run is pending only,
	// so the stem is already trimmed of "_".
	stem := b.String()
	if len(stem) > aliasMaxStem {
		stem = stem[:aliasMaxStem]
	}
	if stem == "" {
		stem = "p"
	}
	sum := sha256.Sum256([]byte(name))
	return stem + "_" + hex.EncodeToString(sum[:3])
}

// Aliased reports whether serve serves name under an alias: it is outside
// ^[A-Za-z0-9_.-]{1,64}$.
func Aliased(name string) bool { return !serveParamName(name) }

// WireName is the name serve shows and accepts for Flow's parameter name:
// name itself inside ^[A-Za-z0-9_.-]{1,64}$, else [ParamAlias] of it.
func WireName(name string) string {
	if serveParamName(name) {
		return name
	}
	return ParamAlias(name)
}
