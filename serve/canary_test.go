package serve

import (
	"strings"
	"testing"
)

// canary is the planted test string: a name, a record number, a secret
// and a path that must never reach the wire, the audit log or stderr.
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
