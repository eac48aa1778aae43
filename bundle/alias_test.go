package bundle

import (
	"regexp"
	"strings"
	"testing"
)

// TestParamAliasVectors pins the alias of docs/bundle.md, Parameter
// aliases, on its published vectors.
func TestParamAliasVectors(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"emoji_🩺":       "emoji_59936a",
		"line\u2028sep": "line_sep_353957",
		"İstanbul":      "istanbul_24ec8f",
		"имя":           "p_63565d",
		"Überprüfung":   "uberprufung_15ec3a",
		"dose.mg ü":     "dose_mg_u_43af24",
	} {
		if got := ParamAlias(name); got != want {
			t.Errorf("ParamAlias(%q) = %q, want %q", name, got, want)
		}
		if got := WireName(name); got != want {
			t.Errorf("WireName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestParamAliasShape: every alias is a name serve accepts, at most 55
// bytes, deterministic, and names inside the rule are never aliased.
func TestParamAliasShape(t *testing.T) {
	t.Parallel()
	rule := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	for _, name := range []string{"", " ", "a b", "_ _", strings.Repeat("x", 65), strings.Repeat("é", 80),
		"__a  b__", "ǅ", "Ⅻ", "ﬁle", "\u0000", "\U0010FFFF", strings.Repeat("ab ", 40)} {
		a := ParamAlias(name)
		if !rule.MatchString(a) || len(a) > aliasMaxStem+7 || !Aliased(name) || WireName(name) != a || ParamAlias(name) != a {
			t.Errorf("ParamAlias(%q) = %q", name, a)
		}
		if stem := a[:len(a)-7]; strings.HasPrefix(stem, "_") {
			t.Errorf("ParamAlias(%q) = %q: stem starts with _", name, a)
		}
	}
	if got := ParamAlias(strings.Repeat("ab ", 40)); len(got) != aliasMaxStem+7 {
		t.Errorf("long name: %q (%d bytes)", got, len(got))
	}
	if got := ParamAlias("ﬁle Ⅻ"); !strings.HasPrefix(got, "file_xii_") {
		t.Errorf("compatibility forms: %q", got)
	}
	for _, name := range []string{"note", "visit_date", "dose.mg", "A-b_9", strings.Repeat("x", 64), "url"} {
		if Aliased(name) || WireName(name) != name {
			t.Errorf("%q is aliased", name)
		}
	}
}
