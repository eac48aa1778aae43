package ledger

import (
	"regexp"
	"strings"
	"testing"
)

// matchers pairs each byte-loop matcher with the anchored expression it
// replaces and strings that match it.
var matchers = []struct {
	name  string
	re    string
	match func(string) bool
	valid []string
}{
	{"kind", `^[a-z][a-z0-9-]{1,95}$`, isKind, []string{"ab", "release-admission", "a" + strings.Repeat("-9", 47) + "z"}},
	{"hex40", `^[0-9a-f]{40}$`, isHex40, []string{strings.Repeat("0a", 20)}},
	{"timestamp", `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$`, isTimestamp, []string{"2026-11-30T00:00:00Z", "9999-99-99T99:99:99Z"}},
	{"version", `^(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})(-[0-9A-Za-z]+([.-][0-9A-Za-z]+)*)?$`, isVersion,
		[]string{"0.0.0", "1.32.0", "1234567890.0.9", "0.0.0-synthetic", "1.2.3-rc.1", "1.2.3-a-b.c", "1.2.3-0"}},
	{"entity", `^[a-z][a-z0-9 -]{0,63}$`, isEntity, []string{"a", "clinic", "front desk-2", "a" + strings.Repeat(" ", 63)}},
	{"deployid", `^[1-9][0-9]*$`, isDeployID, []string{"1", "1300570990", "9000000000000000000000"}},
	{"kmsarn", `^arn:aws:kms:us-east-1:992382684924:key/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, isKMSArn,
		[]string{"arn:aws:kms:us-east-1:992382684924:key/0123abcd-4567-89ef-0a1b-23456789abcd"}},
	{"innerwf", `^https://github\.com/OpenAdaptAI/[A-Za-z0-9_.-]+/\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml@refs/heads/[A-Za-z0-9._/-]+$`, isInnerWF,
		[]string{"https://github.com/OpenAdaptAI/openadapt-ops/.github/workflows/public-trust.yml@refs/heads/main",
			"https://github.com/OpenAdaptAI/x/.github/workflows/a.b.yaml@refs/heads/release/v1.2_x-y",
			"https://github.com/OpenAdaptAI/../.github/workflows/.yml.yml@refs/heads//"}},
	{"sig86", `^[A-Za-z0-9+/]{86}==$`, isSig86, []string{strings.Repeat("aZ09+/", 14) + "ab==", strings.Repeat("/", 86) + "=="}},
	{"oaed", `^oa-public-trust-ed25519-[0-9a-f]{16}$`, isOAEd, []string{"oa-public-trust-ed25519-0123456789abcdef"}},
	{"oap256", `^oa-public-trust-p256-[0-9a-f]{16}$`, isOAP256, []string{"oa-public-trust-p256-fedcba9876543210"}},
}

// edits returns s with every single-byte deletion, and every replacement and
// insertion of a byte from alphabet, at every position.
func edits(s, alphabet string) []string {
	var out []string
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			out = append(out, s[:i]+s[i+1:])
		}
		for j := 0; j < len(alphabet); j++ {
			out = append(out, s[:i]+alphabet[j:j+1]+s[i:])
			if i < len(s) {
				out = append(out, s[:i]+alphabet[j:j+1]+s[i+1:])
			}
		}
	}
	return out
}

// The alphabet holds each class boundary of the expressions: digits, hex,
// both cases, the punctuation they name, and bytes that no class allows
// (NUL, newline, '@' where it is not expected, non-ASCII, invalid UTF-8).
const editAlphabet = "09afgzAFGZ-._/+= :@Ty\n\x00\xff\xc3\xa9"

func TestMatchersAgreeWithRegexp(t *testing.T) {
	for _, m := range matchers {
		re := regexp.MustCompile(m.re)
		n := 0
		check := func(s string) {
			n++
			if got, want := m.match(s), re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, regexp %s says %v", m.name, s, got, m.re, want)
			}
		}
		for _, v := range m.valid {
			if !m.match(v) {
				t.Errorf("%s(%q) = false, want true", m.name, v)
			}
			check(v)
			check(v + "\n")
			check(v + v)
			for _, e := range edits(v, editAlphabet) {
				check(e)
				if len(v) > 24 {
					continue
				}
				for _, e2 := range edits(e, "0a-.") { // two edits for the short shapes (versions above all)
					check(e2)
				}
			}
		}
		for _, s := range []string{"", "a", "0", "-", ".", "\n", strings.Repeat("a", 200), strings.Repeat("1", 11) + ".0.0"} {
			check(s)
		}
		if n < 100 {
			t.Fatalf("%s: only %d strings checked", m.name, n)
		}
	}
}

func FuzzMatchers(f *testing.F) {
	for _, m := range matchers {
		for _, v := range m.valid {
			f.Add(v)
		}
	}
	res := make([]*regexp.Regexp, len(matchers))
	for i, m := range matchers {
		res[i] = regexp.MustCompile(m.re)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, m := range matchers {
			if got, want := m.match(s), res[i].MatchString(s); got != want {
				t.Fatalf("%s(%q) = %v, regexp says %v", m.name, s, got, want)
			}
		}
	})
}
