package bundle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSafeView(t *testing.T) {
	b := &Bundle{
		Params: []Param{
			{Name: "a b", Type: "string", Choices: []string{}},
			{Name: "kind", Type: "Jane Doe", Required: true, Choices: []string{}},
			{Name: "pw", Type: "string", Required: true, Secret: true, Choices: []string{}},
			{Name: "prio", Type: "enum", Choices: []string{"x", "y"}},
			{Name: "url", Type: "string", Choices: []string{}},
		},
		LegacyParams: []string{"url", "prio", "a b", "pw"},
		SecretParams: []string{"pw"},
	}
	got := b.SafeView()
	want := SafeView{
		// "a b" is shown under its alias, sorted by the name shown.
		Params: []SafeParam{{Name: "a_b_c8687a", Type: "string", Aliased: true},
			{Name: "kind", Type: OtherType, Required: true}, {Name: "prio", Type: "enum", ChoiceCount: 2}},
		Hidden:           HiddenParams{Secret: 1, RefusedName: 1},
		LegacyParams:     []string{"prio", "a_b_c8687a"},
		SecretParamCount: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if v := (&Bundle{}).SafeView(); v.Params == nil || v.LegacyParams == nil || v.Hidden.Total() != 0 {
		t.Errorf("empty bundle: %+v", v)
	}
}

func TestSafeValues(t *testing.T) {
	for _, tc := range []struct {
		f        func(string) string
		in, want string
	}{
		{SafeType, "entity_ref", "entity_ref"},
		{SafeType, "String", OtherType},
		{SafeType, "", OtherType},
		{SafeCertificationStatus, "expired", "expired"},
		{SafeCertificationStatus, "", ""},
		{SafeCertificationStatus, "certified by Dr. X", OtherType},
		{SafeVersion, "1.32.0", "1.32.0"},
		{SafeVersion, "1.32.0+local.abc-1", "1.32.0+local.abc-1"},
		{SafeVersion, "", ""},
		{SafeVersion, "v1.2", OtherType},
		{SafeVersion, "1.2 Jane", OtherType},
	} {
		if got := tc.f(tc.in); got != tc.want {
			t.Errorf("%q -> %q, want %q", tc.in, got, tc.want)
		}
	}
}
