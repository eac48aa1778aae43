package serve

import (
	"strings"
	"testing"
)

// canary is the planted test string of mcp-surface.md (Terms).
const canary = "Jane Roe MRN-9911 sk_live_secret /private/protected/path"

var canaryTokens = []string{canary, "Jane Roe", "MRN-9911", "sk_live_secret", "/private/protected/path"}

func assertNoCanary(t *testing.T, where, s string) {
	t.Helper()
	for _, tok := range canaryTokens {
		if strings.Contains(s, tok) {
			t.Fatalf("%s leaks %q: %.300s", where, tok, s)
		}
	}
}
