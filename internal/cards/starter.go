package cards

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Starter renders a starter card for the operator to fill in: an empty
// name, purpose and done_means, and an empty description for each input
// (Flow's own names, sorted, duplicates once), indented by two spaces,
// ending with a newline. Nothing else from the bundle fills it (a name
// derived from the workflow's display name would put protected text in
// front of agents). It is deliberately incomplete: serve ignores a card
// with an empty text (with a warning saying which field), so nothing
// reaches an agent until the operator has written every text or removed
// the fields they leave out.
func Starter(inputs []string) []byte {
	inputs = slices.Clone(inputs)
	slices.Sort(inputs)
	inputs = slices.Compact(inputs)
	str := func(s string) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")
	}
	var b strings.Builder
	b.WriteString("{\n  \"name\": \"\",\n  \"purpose\": \"\",\n  \"done_means\": \"\",\n  \"inputs\": {")
	for i, in := range inputs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n    " + str(in) + `: {"description": ""}`)
	}
	if len(inputs) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}\n}\n")
	return []byte(b.String())
}
