package attention

import (
	"encoding/json"
	"os"
	"testing"
)

// TestNormalizeISOAgainstCPython replays 900 mutated timestamps whose
// expected value CPython 3.11.7 computed with
// datetime.fromisoformat(s.replace("Z", "+00:00")).isoformat() (null =
// ValueError). Go must reject what Python rejects and, where it accepts,
// give Python's text; it may reject malformed input that CPython's parser
// tolerates.
func TestNormalizeISOAgainstCPython(t *testing.T) {
	data, err := os.ReadFile("testdata/iso_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases [][2]*string
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	agree := 0
	for _, c := range cases {
		got, ok := normalizeISO(*c[0])
		switch {
		case c[1] == nil && ok:
			t.Errorf("%q: accepted as %q, CPython rejects it", *c[0], got)
		case c[1] != nil && ok && got != *c[1]:
			t.Errorf("%q: %q, CPython gives %q", *c[0], got, *c[1])
		case (c[1] == nil) == !ok:
			agree++
		}
	}
	if agree*100 < len(cases)*90 {
		t.Errorf("only %d of %d cases agree with CPython", agree, len(cases))
	}
}
