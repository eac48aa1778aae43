package cards

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// A card's pattern is shown to clients as a JSON Schema "pattern", which
// they read as an ECMAScript regular expression, and this server checks
// values with Go's RE2. Only syntax that means the same in both (with or
// without ECMAScript's u flag) is accepted (docs/mcp.md, Workflow cards):
//
//   - literal characters of the Basic Multilingual Plane; the
//     metacharacters ^ $ . | ( ) [ ] * + ? { } with their usual meaning;
//   - quantifiers * + ? {n} {n,} {n,m}, each optionally lazy (?);
//   - groups ( ), (?: ) and (?<name> );
//   - escapes \d \D \w \W \b \B \t \n \r \f \v, \xhh, and a backslash before
//     one of ^ $ \ . * + ? ( ) [ ] { } | / (and - inside a class);
//   - classes [ ] and [^ ] of those characters, escapes (not \b \B) and
//     ranges.
//
// Refused: \s and \S (ECMAScript's include Unicode spaces), \p and \P (they
// need the u flag), \A \z \Q \E \C and every other letter escape, \0–\9
// (back references or octal), \x{…}, inline flags such as (?i) and
// (?P<name>), a { or } that is not part of a quantifier, a ] outside a
// class, a class that starts with ] or holds an unescaped [ (POSIX
// [:alpha:] included), and characters beyond U+FFFF (two code units in
// ECMAScript). The dot is
// checked with ECMAScript's meaning: any character but \n, \r, U+2028 and
// U+2029.

// dotES is ECMAScript's "." in RE2 syntax.
const dotES = `[^\n\r\x{2028}\x{2029}]`

// compilePattern translates p into RE2 with ECMAScript's meaning and
// compiles it; on refusal it returns nil and the rule broken.
func compilePattern(p string) (*regexp.Regexp, string) {
	var out strings.Builder
	inClass := false
	classStart := false // the next character is the first of a class
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRuneInString(p[i:])
		if r > 0xffff {
			return nil, "holds a character beyond U+FFFF"
		}
		first := classStart
		classStart = false
		switch {
		case r == '\\':
			if i+1 >= len(p) {
				return nil, "ends with a backslash"
			}
			e := p[i+1]
			switch {
			case strings.IndexByte(`dDwWtnrfv`, e) >= 0:
				out.WriteString(p[i : i+2])
				i += 2
			case e == 'b' || e == 'B':
				if inClass {
					return nil, `uses \b inside a class (a backspace in ECMAScript)`
				}
				out.WriteString(p[i : i+2])
				i += 2
			case e == 'x':
				if i+3 >= len(p) || !isHex(p[i+2]) || !isHex(p[i+3]) {
					return nil, `uses \x without two hex digits (\x{…} is RE2 only)`
				}
				out.WriteString(p[i : i+4])
				i += 4
			case strings.IndexByte(`^$\.*+?()[]{}|/`, e) >= 0 || inClass && e == '-':
				if e == '/' {
					out.WriteByte('/') // RE2 has no \/ escape
				} else {
					out.WriteString(p[i : i+2])
				}
				i += 2
			case e == 's' || e == 'S':
				return nil, `uses \s or \S, whose ECMAScript meaning includes Unicode spaces; write the characters in a class`
			case e == 'p' || e == 'P':
				return nil, `uses \p or \P, which ECMAScript reads only with its u flag`
			case '0' <= e && e <= '9':
				return nil, `uses a back reference or an octal escape (\0–\9)`
			default:
				return nil, "uses an escape outside the shared syntax (" + `\A \z \Q \E \C and other letters are refused` + ")"
			}
			continue
		case inClass:
			switch r {
			case ']':
				if first {
					return nil, "starts a class with ]"
				}
				inClass = false
			case '[':
				return nil, "holds [ inside a class (POSIX classes such as [:alpha:] are RE2 only)"
			}
		case r == '[':
			inClass, classStart = true, true
			out.WriteByte('[')
			if i+1 < len(p) && p[i+1] == '^' {
				out.WriteByte('^')
				i++
			}
			i++
			continue
		case r == '.':
			out.WriteString(dotES)
			i++
			continue
		case r == '(':
			if strings.HasPrefix(p[i:], "(?") {
				switch {
				case strings.HasPrefix(p[i:], "(?:"):
				case strings.HasPrefix(p[i:], "(?<") && !strings.HasPrefix(p[i:], "(?<=") && !strings.HasPrefix(p[i:], "(?<!"):
				default:
					return nil, "uses (? syntax other than (?: and (?<name> (inline flags, (?P<name> and lookaround are refused)"
				}
			}
		case r == '{':
			end, ok := quantifier(p[i:])
			if !ok {
				return nil, "holds a { that is not a quantifier; write \\{"
			}
			out.WriteString(p[i : i+end])
			i += end
			continue
		case r == '}':
			return nil, "holds a } that is not a quantifier; write \\}"
		case r == ']':
			return nil, "holds a ] outside a class; write \\]"
		}
		out.WriteString(p[i : i+n])
		i += n
	}
	if inClass {
		return nil, "leaves a class open"
	}
	re, err := regexp.Compile(out.String())
	if err != nil {
		return nil, "does not compile as an RE2 regular expression"
	}
	return re, ""
}

// quantifier returns the length of the {n}, {n,} or {n,m} that s starts
// with (digits only), or ok false.
func quantifier(s string) (int, bool) {
	i := 1
	digits := func() int {
		j := i
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if digits() == 0 {
		return 0, false
	}
	if i < len(s) && s[i] == ',' {
		i++
		digits()
	}
	if i < len(s) && s[i] == '}' {
		return i + 1, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
