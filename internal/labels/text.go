package labels

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// zeroWidthJoiner (U+200D) is the one format character operator text may
// hold: it joins emoji sequences and some scripts, and shows nothing alone.
const zeroWidthJoiner = 0x200d

// utf8Error is TextError.Rune for text that is not valid UTF-8.
const utf8Error = -1

// TextError names the first character of operator text (a label, a
// description, a card's text) that may not be shown: its class and code
// point, never the text around it.
type TextError struct {
	// Rune is the refused code point, or -1 for invalid UTF-8.
	Rune rune
	// Class says why, in words ("a bidirectional control").
	Class string
}

func (e *TextError) Error() string {
	if e.Rune == utf8Error {
		return "invalid UTF-8"
	}
	return fmt.Sprintf("contains %s (U+%04X)", e.Class, e.Rune)
}

// CheckText is the one validator for text an operator or a bundle's card
// puts in front of an agent or a person. It refuses, by Unicode property
// (the tables of Go's unicode package, not a range list):
//   - Cc, control characters (tab and newline included);
//   - Zl and Zp, the line and paragraph separators;
//   - Bidi_Control, the marks that reorder text (U+200E, U+200F and U+061C
//     as well as the embeddings, overrides and isolates);
//   - Noncharacter_Code_Point;
//   - Default_Ignorable_Code_Point, which holds Cf (format characters such
//     as U+200B, U+00AD, U+FEFF and the tag characters),
//     Other_Default_Ignorable_Code_Point (U+115F, U+3164, U+034F …) and
//     Variation_Selector, except U+200D ZERO WIDTH JOINER;
//
// and text that is not valid UTF-8. The error names the class and the code
// point of the first refused character.
func CheckText(s string) error {
	for i, r := range s {
		if r >= 0x20 && r < 0x7f {
			continue
		}
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return &TextError{Rune: utf8Error}
			}
		}
		if class := refused(r); class != "" {
			return &TextError{Rune: r, Class: class}
		}
	}
	return nil
}

// refused returns the class of r in words when operator text may not hold
// it, else "".
func refused(r rune) string {
	switch {
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
		return "a line or paragraph separator"
	case unicode.Is(unicode.Bidi_Control, r):
		return "a bidirectional control"
	case unicode.Is(unicode.Noncharacter_Code_Point, r):
		return "a noncharacter"
	case r == zeroWidthJoiner:
		return ""
	case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r):
		return "an invisible formatting character"
	}
	return ""
}
