package bundle

import (
	"slices"
	"strings"
)

// The PHI-safe view (docs/bundle.md, Parameters). Everything a
// bundle holds is free text written by whoever built it: a parameter "type"
// or an enum choice can carry a patient name as easily as a display name can.
// The default `bundle inspect` and `bundle verify --json` views therefore
// show only values that were validated against a closed set, never the text
// itself: a type outside Flow's enumeration becomes [OtherType], choices are
// counted, a name outside serve's rule is shown as the alias serve serves it
// under ([WireName]; the alias is what every MCP client sees anyway), and a
// reserved or secret name is hidden and counted. The exact canonical schema
// ([Bundle.Params]) is for `--protected` only.

// ParamTypes are Flow's enumerated parameter types (ParamKind in Flow's
// ir.py).
var ParamTypes = []string{"string", "date", "enum", "number", "entity_ref"}

// OtherType is shown in the safe view for a type outside [ParamTypes].
const OtherType = "other"

// SafeType returns t when it is one of [ParamTypes], else [OtherType].
func SafeType(t string) string {
	for _, k := range ParamTypes {
		if t == k {
			return t
		}
	}
	return OtherType
}

// SafeParam is one parameter of the safe view: the name serve serves it
// under ([WireName]), a validated type, and the number of choices.
type SafeParam struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	ChoiceCount int    `json:"choice_count"`
	// Aliased marks a Name that is the alias of a name outside serve's
	// rule (Flow's own name is shown only with --protected).
	Aliased bool `json:"aliased,omitempty"`
}

// HiddenParams counts the names the safe view leaves out. A secret name is
// counted as Secret even when serve would also refuse it.
type HiddenParams struct {
	// Secret counts secret_params entries (never shown: serve never accepts
	// a secret, and its name is the operator's business).
	Secret int `json:"secret"`
	// RefusedName counts names that serve refuses: the reserved url and
	// idempotency_key (a name outside ^[A-Za-z0-9_.-]{1,64}$ is shown under
	// its alias instead).
	RefusedName int `json:"refused_name"`
}

// Total is the number of hidden names.
func (h HiddenParams) Total() int { return h.Secret + h.RefusedName }

// SafeView is the PHI-safe projection of a loaded bundle's parameters.
type SafeView struct {
	// Params is [Bundle.Params] minus the hidden names, sorted by the name
	// shown.
	Params []SafeParam
	// Hidden counts the names left out of Params.
	Hidden HiddenParams
	// LegacyParams is [Bundle.LegacyParams] minus the hidden names, by
	// the name shown, in JSON order (they are counted in Hidden: every legacy
	// name is in Params).
	LegacyParams []string
	// SecretParamCount is len([Bundle.SecretParams]); the names are never shown.
	SecretParamCount int
}

// SafeView returns the PHI-safe projection of b's parameters. Every slice
// is non-nil. For a bundle that did not load it is empty.
func (b *Bundle) SafeView() SafeView {
	secret := make(map[string]bool, len(b.SecretParams))
	for _, s := range b.SecretParams {
		secret[s] = true
	}
	hidden := func(name string) bool { return secret[name] || reservedParams[name] }
	v := SafeView{Params: []SafeParam{}, LegacyParams: []string{}, SecretParamCount: len(b.SecretParams)}
	for _, p := range b.Params {
		switch {
		case secret[p.Name]:
			v.Hidden.Secret++
		case reservedParams[p.Name]:
			v.Hidden.RefusedName++
		default:
			v.Params = append(v.Params, SafeParam{Name: WireName(p.Name), Type: SafeType(p.Type), Required: p.Required,
				ChoiceCount: len(p.Choices), Aliased: Aliased(p.Name)})
		}
	}
	slices.SortStableFunc(v.Params, func(x, y SafeParam) int { return strings.Compare(x.Name, y.Name) })
	for _, n := range b.LegacyParams {
		if !hidden(n) {
			v.LegacyParams = append(v.LegacyParams, WireName(n))
		}
	}
	return v
}

// certificationStatuses are the labels Flow sets (ir.py Provenance) and the
// only ones its own console shows.
var certificationStatuses = []string{"certified", "failed", "expired"}

// SafeCertificationStatus returns s when it is one of Flow's labels
// ("certified", "failed", "expired"), "" for none, else [OtherType].
func SafeCertificationStatus(s string) string {
	if s == "" {
		return ""
	}
	for _, k := range certificationStatuses {
		if s == k {
			return s
		}
	}
	return OtherType
}

// SafeVersion returns v when it looks like a version (a digit first, then
// at most 63 of [0-9A-Za-z.+-]), "" for none, else [OtherType]. The
// compiler version is unprotected provenance text.
func SafeVersion(v string) string {
	if v == "" {
		return ""
	}
	if len(v) > 64 || v[0] < '0' || v[0] > '9' {
		return OtherType
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '.' || c == '+' || c == '-') {
			return OtherType
		}
	}
	return v
}
