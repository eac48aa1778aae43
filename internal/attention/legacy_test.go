package attention

// The raw-member projector helpers and the capability canonical form as they
// were before they moved onto pyjson handles, kept only as
// the oracle of the differential tests in diff_test.go: each function is the
// previous production code with its name prefixed "old" (oldSummaryOf is the
// part of the old capabilitySummary after the signature check). Nothing here
// is linked into the binary.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldParseObject is the previous flowrun.ParseObject: the top-level members
// of a strictly parsed object as raw bytes.
func oldParseObject(data []byte) (map[string]json.RawMessage, bool) {
	var d pyjson.Doc
	opt := pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits, Floats: pyjson.FloatRefuse}
	if d.Parse(data, opt) != nil || d.Kind(d.Root()) != pyjson.Object {
		return nil, false
	}
	obj := make(map[string]json.RawMessage, d.Len(d.Root()))
	for k, v := range d.Members(d.Root()) {
		r := d.Raw(v)
		obj[d.Str(k)] = r[:len(r):len(r)]
	}
	return obj, true
}

func oldFactsOf(report map[string]json.RawMessage) *reportFacts {
	f := &reportFacts{success: oldIsTrue(report["success"])}
	f.outcome, _ = oldStr(report["execution_outcome"])
	if s, ok := oldStr(report["started_at"]); ok {
		if norm, ok := normalizeISO(s); ok {
			f.createdAt = &norm
		}
	}
	if halt, ok := oldParseObject(report["halt"]); ok {
		f.hasHalt = true
		f.haltMarked = oldHaltMarked(halt)
		f.observed = oldArrayLen(halt["observed_texts"])
		f.completed = oldArrayLen(halt["completed_intents"])
	}
	f.before, f.after = oldArtifactIDs(report["results"])
	return f
}

func oldPauseMarked(pause map[string]json.RawMessage) bool {
	if pause == nil {
		return false
	}
	s, ok := oldStr(pause["reason"])
	return ok && hasMarker(s)
}

func oldHaltMarked(halt map[string]json.RawMessage) bool {
	if s, ok := oldStr(halt["reason"]); ok && hasMarker(s) {
		return true
	}
	var observed []json.RawMessage
	if json.Unmarshal(halt["observed_texts"], &observed) == nil {
		for _, o := range observed {
			if s, ok := oldStr(o); ok && hasMarker(s) {
				return true
			}
		}
	}
	return false
}

func oldArtifactIDs(results json.RawMessage) (*string, *string) {
	var list []json.RawMessage
	if json.Unmarshal(results, &list) != nil {
		return nil, nil
	}
	pick, terminal := -1, -1
	for i, raw := range list {
		r, _ := oldParseObject(raw)
		if r == nil || oldIsTrue(r["ok"]) || oldIsTrue(r["skipped"]) || oldIsTrue(r["exception_handled"]) {
			continue
		}
		if id, _ := oldStr(r["step_id"]); id == "<terminal>" {
			terminal = i
			continue
		}
		pick = i
	}
	if pick < 0 {
		pick = terminal
	}
	if pick < 0 {
		return nil, nil
	}
	r, _ := oldParseObject(list[pick])
	var before, after *string
	if s, ok := oldStr(r["before_png"]); ok && s != "" {
		v := fmt.Sprintf("step-%03d-before", pick+1)
		before = &v
	}
	if s, ok := oldStr(r["after_png"]); ok && s != "" {
		v := fmt.Sprintf("step-%03d-after", pick+1)
		after = &v
	}
	return before, after
}

func oldStr(v json.RawMessage) (string, bool) {
	t := strings.TrimSpace(string(v))
	if !strings.HasPrefix(t, `"`) {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func oldIsTrue(v json.RawMessage) bool { return strings.TrimSpace(string(v)) == "true" }

func oldArrayLen(v json.RawMessage) int {
	var a []json.RawMessage
	if json.Unmarshal(v, &a) != nil {
		return 0
	}
	return len(a)
}

func oldCanonicalUnsigned(obj map[string]json.RawMessage) ([]byte, error) {
	unsigned := make(map[string]json.RawMessage, len(obj))
	for k, v := range obj {
		unsigned[k] = v
	}
	delete(unsigned, "signature")
	var sv float64
	if json.Unmarshal(obj["schema_version"], &sv) != nil {
		return nil, errNotObject
	}
	if sv < 2 {
		delete(unsigned, "event_sequence")
	}
	if sv < 3 {
		delete(unsigned, "source_identity_required")
		delete(unsigned, "source_identity")
	}
	return oldCanonical(unsigned)
}

func oldCanonical(obj map[string]json.RawMessage) ([]byte, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return bundle.CanonicalJSON(data)
}

func oldSummaryOf(obj map[string]json.RawMessage, digest string) *Capability {
	sum := &Capability{Digest: digest}
	var ok bool
	if sum.ExpiresAt, ok = oldStr(obj["expires_at"]); !ok {
		return nil
	}
	var actions []json.RawMessage
	if json.Unmarshal(obj["allowed_actions"], &actions) != nil {
		return nil
	}
	sum.AllowedActions = make([]string, 0, len(actions))
	for _, a := range actions {
		s, ok := oldStr(a)
		if !ok || !knownActions[s] {
			return nil
		}
		sum.AllowedActions = append(sum.AllowedActions, s)
	}
	if sum.DeliveryState, ok = oldStr(obj["delivery_state"]); !ok || !knownDeliveryStates[sum.DeliveryState] {
		return nil
	}
	switch string(obj["source_identity_required"]) {
	case "true":
		sum.SourceIdentityRequired = true
	case "false", "":
	default:
		return nil
	}
	if si, ok := oldParseObject(obj["source_identity"]); ok {
		if s, ok := oldStr(si["status"]); ok {
			sum.SourceIdentityStatus = &s
		}
	}
	return sum
}
