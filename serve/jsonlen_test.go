package serve

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// jsonStringLen must count exactly what encoding/json writes: the
// tools/list page size (and so every page's bytes) depends on it.
func TestJSONStringLenMatchesEncoder(t *testing.T) {
	cases := []string{"", "plain", `"quoted" \ back`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a>&amp;",
		"é ü 漢字 🎉", "\u2028\u2029", "\xff\xfe bad", "\xe2\x82", "tail\xc3"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "\"", "\\", "\n", "\x01", "<", "&", "é", "\u2028", "\xff", "\xe2\x82", "🎉", " "}
	for range 2000 {
		s := ""
		for range rng.IntN(12) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonStringLen(s); got != len(b) {
			t.Fatalf("jsonStringLen(%q) = %d, encoding/json writes %d bytes (%s)", s, got, len(b), b)
		}
	}
}
