package bundle

import "testing"

func TestParamNamesReason(t *testing.T) {
	for _, tc := range []struct {
		params []string
		want   Unavailable
	}{
		{nil, Available},
		{[]string{"note", "a.b", "dose_mg", "x-1"}, Available},
		{[]string{"note", "url"}, ReservedParameterName},
		{[]string{"bad name", "idempotency_key"}, ReservedParameterName},
		// Names outside the rule are served under their alias.
		{[]string{"emoji_🩺"}, Available},
		{[]string{""}, Available},
		{[]string{string(make([]byte, 65))}, Available},
		{[]string{"Überprüfung", "İstanbul", "имя", "line\u2028sep", "note"}, Available},
		// An alias equal to another parameter's name, or two names with
		// one alias (the same stem and the same hash prefix can only come
		// from a name given twice, so a name against an alias here).
		{[]string{"Überprüfung", "uberprufung_15ec3a"}, ParameterAliasCollision},
		{[]string{"p_63565d", "имя"}, ParameterAliasCollision},
		// Reserved names keep their own reason, before any collision.
		{[]string{"Überprüfung", "uberprufung_15ec3a", "url"}, ReservedParameterName},
	} {
		if got := ParamNamesReason(tc.params); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.params, got, tc.want)
		}
	}
	if !AcceptedParamName("note") || AcceptedParamName("url") || AcceptedParamName("a b") {
		t.Error("AcceptedParamName")
	}
	if Availability(nil) != Unreadable {
		t.Error("nil bundle")
	}
	for k, want := range map[ErrorKind]Unavailable{
		KindContentDigestMismatch: IntegrityFailed, KindAssetMissing: IntegrityFailed,
		KindUnsafePath: UnsafePath, KindAssetHashMismatch: IntegrityFailed, KindKDFCostRejected: DecryptFailed,
		KindInvalidJSON: InvalidBundle, KindUnreadable: Unreadable, KindDecryptFailed: DecryptFailed, KindMissingKey: MissingKey, KindNotABundle: InvalidBundle,
	} {
		if got := Availability(&Bundle{ErrorKind: k}); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
}
