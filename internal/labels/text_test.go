package labels

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// TestTextRefusesByProperty: every character of the refused Unicode
// properties is refused wherever it stands in the text, whole tables at a
// time, so a character missed by a range list fails here.
func TestTextRefusesByProperty(t *testing.T) {
	tables := map[string]*unicode.RangeTable{
		"Cc":                                 unicode.Cc,
		"Cf":                                 unicode.Cf,
		"Zl":                                 unicode.Zl,
		"Zp":                                 unicode.Zp,
		"Bidi_Control":                       unicode.Bidi_Control,
		"Noncharacter_Code_Point":            unicode.Noncharacter_Code_Point,
		"Other_Default_Ignorable_Code_Point": unicode.Other_Default_Ignorable_Code_Point,
		"Variation_Selector":                 unicode.Variation_Selector,
	}
	for name, tab := range tables {
		n := 0
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if !unicode.Is(tab, r) || r == zeroWidthJoiner {
				continue
			}
			n++
			err := CheckText("ok " + string(r) + " ok")
			var te *TextError
			if !errors.As(err, &te) || te.Rune != r {
				t.Errorf("%s U+%04X: %v, want refused", name, r, err)
			}
		}
		if n == 0 {
			t.Errorf("%s: empty table", name)
		}
	}
}

// TestTextVectors: the characters a reader cannot see or that reorder text
// are refused (named by code point, never echoing the text); ordinary text,
// emoji sequences joined by U+200D and combining marks pass.
func TestTextVectors(t *testing.T) {
	for _, s := range []string{
		"Triage a referral",
		"ünïcödé, 漢字, עברית, العربية",
		"👩\u200d💻 pair",
		"e\u0301", // combining acute
		"",
	} {
		if err := CheckText(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, tc := range []struct {
		in   string
		r    rune
		word string
	}{
		{"a\u200eb", 0x200e, "bidirectional"},
		{"a\u200fb", 0x200f, "bidirectional"},
		{"a\u061cb", 0x061c, "bidirectional"},
		{"a\u202eb", 0x202e, "bidirectional"},
		{"a\u2067b", 0x2067, "bidirectional"},
		{"a\u200bb", 0x200b, "invisible"},
		{"a\u200cb", 0x200c, "invisible"},
		{"a\u00adb", 0x00ad, "invisible"},
		{"a\u2060b", 0x2060, "invisible"},
		{"a\ufeffb", 0xfeff, "invisible"},
		{"a\U000e0041b", 0xe0041, "invisible"},
		{"a\u115fb", 0x115f, "invisible"},
		{"a\u3164b", 0x3164, "invisible"},
		{"a\u034fb", 0x034f, "invisible"},
		{"a\ufe0fb", 0xfe0f, "invisible"},
		{"a\U000e0100b", 0xe0100, "invisible"},
		{"a\u180eb", 0x180e, "invisible"},
		{"a\ufffeb", 0xfffe, "noncharacter"},
		{"a\ufdd0b", 0xfdd0, "noncharacter"},
		{"a\U0010ffffb", 0x10ffff, "noncharacter"},
		{"a\u2028b", 0x2028, "separator"},
		{"a\u2029b", 0x2029, "separator"},
		{"a\tb", '\t', "control"},
		{"a\u0085b", 0x85, "control"},
		{"a\x7fb", 0x7f, "control"},
		{"a\xffb", utf8Error, "UTF-8"},
	} {
		err := CheckText(tc.in)
		var te *TextError
		if !errors.As(err, &te) || te.Rune != tc.r {
			t.Errorf("%+q: %v, want refused at U+%04X", tc.in, err, tc.r)
			continue
		}
		if !strings.Contains(err.Error(), tc.word) || strings.Contains(err.Error(), tc.in) {
			t.Errorf("%+q: message %q", tc.in, err)
		}
	}
}

// TestParseRefusesBidiMarks: the labels file refuses the marks the reader
// cannot see, with the pointer of the field.
func TestParseRefusesBidiMarks(t *testing.T) {
	for _, r := range []string{"\u200e", "\u200f", "\u061c", "\u200b", "\ufeff", "\ufe0f", "\ufdd0"} {
		_, err := Parse([]byte(doc(`{"` + id1 + `":{"description":"Files` + r + ` one"}}`)))
		var e *Error
		if !errors.As(err, &e) || e.Pointer != "/workflows/"+id1+"/description" {
			t.Errorf("%+q: %v", r, err)
		}
	}
	if _, err := Parse([]byte(doc(`{"` + id1 + `":{"label":"👩\u200d💻 pair"}}`))); err != nil {
		t.Errorf("ZWJ sequence: %v", err)
	}
}
