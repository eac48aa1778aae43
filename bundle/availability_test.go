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
		{[]string{"emoji_🩺"}, UnsupportedParameterName},
		{[]string{""}, UnsupportedParameterName},
		{[]string{string(make([]byte, 65))}, UnsupportedParameterName},
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
