package bundle

// Unavailable is why `serve` lists a workflow as unavailable, with no run
// tool (docs/bundle.md, Availability). The one enum and the one
// function ([Availability]) that serve and `skill emit` share; "" means
// available.
type Unavailable string

// Unavailable reasons.
const (
	Available              Unavailable = ""
	LegacyUnverifiedReason Unavailable = "legacy_unverified"
	IntegrityFailed        Unavailable = "integrity_failed"
	UnsafePath             Unavailable = "unsafe_path" // a symlink where the bundle needs a real file or folder
	DecryptFailed          Unavailable = "decrypt_failed"
	MissingKey             Unavailable = "missing_key"
	InvalidBundle          Unavailable = "invalid_bundle"
	Unreadable             Unavailable = "unreadable"
	ReservedParameterName  Unavailable = "reserved_parameter_name"
	// UnsupportedParameterName is no longer given: a name outside serve's
	// rule is served under its alias ([WireName]). It stays in [Reasons],
	// whose order is part of serve's wire.
	UnsupportedParameterName Unavailable = "unsupported_parameter_name"
	// ParameterAliasCollision: two declared parameters have the same wire
	// name (an alias equal to another parameter's name or alias).
	ParameterAliasCollision Unavailable = "parameter_alias_collision"
)

// serveParamName is serve's parameter-name rule,
// ^[A-Za-z0-9_.-]{1,64}$: Claude's API rejects tool property names outside
// it, so a name outside it is served under its alias ([WireName]). (A byte
// loop: no regexp at init.)
func serveParamName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// reservedParams are the run tool's own arguments.
var reservedParams = map[string]bool{"url": true, "idempotency_key": true}

// AcceptedParamName reports whether serve accepts name as a run-tool
// property as it is: not reserved, and within ^[A-Za-z0-9_.-]{1,64}$ (a
// name outside it is served under its alias).
func AcceptedParamName(name string) bool {
	return !reservedParams[name] && serveParamName(name)
}

// ReservedParamName reports whether name is one of the run tool's own
// arguments (url, idempotency_key).
func ReservedParamName(name string) bool { return reservedParams[name] }

// ParamNamesReason applies serve's name rules to declared parameter names:
// a reserved name first, then two names with the same wire name
// ([WireName]); "" when all are accepted.
func ParamNamesReason(params []string) Unavailable {
	for _, p := range params {
		if reservedParams[p] {
			return ReservedParameterName
		}
	}
	wire := make(map[string]bool, len(params))
	for _, p := range params {
		w := WireName(p)
		if wire[w] {
			return ParameterAliasCollision
		}
		wire[w] = true
	}
	return Available
}

// Reasons lists every unavailable reason, in documentation order (the
// unavailable_reason enum of serve's outputSchemas).
var Reasons = []Unavailable{LegacyUnverifiedReason, IntegrityFailed, UnsafePath, DecryptFailed, MissingKey,
	InvalidBundle, Unreadable, ReservedParameterName, UnsupportedParameterName, ParameterAliasCollision}

// Availability is the reason serve lists b as unavailable, or "" when it
// is available: it must fully verify (content digest and every asset; a
// ContentVerified sealed bundle counts), no declared parameter may be
// reserved, and their wire names must differ.
func Availability(b *Bundle) Unavailable {
	switch {
	case b == nil:
		return Unreadable
	case b.Integrity == LegacyUnverified:
		return LegacyUnverifiedReason
	case b.Integrity == Verified || b.Integrity == ContentVerified:
		return ParamNamesReason(b.DeclaredParams())
	}
	switch b.ErrorKind {
	case KindContentDigestMismatch, KindAssetHashMismatch, KindAssetMissing:
		return IntegrityFailed
	case KindUnsafePath:
		return UnsafePath
	case KindDecryptFailed, KindKDFCostRejected:
		return DecryptFailed
	case KindMissingKey:
		return MissingKey
	case KindInvalidJSON, KindNotABundle:
		return InvalidBundle
	}
	return Unreadable
}
