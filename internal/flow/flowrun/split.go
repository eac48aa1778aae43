package flowrun

import (
	"fmt"
	"strings"
)

// SplitCommand splits an operator-supplied command string (the --flow-cli
// value) into argv words using POSIX shell quoting rules, and nothing else:
// quotes and backslashes only, no expansion.
//
// The rules, as in sh(1) "Quoting":
//   - unquoted space, tab and newline separate words; runs of them count once;
//   - an unquoted backslash keeps the next character literally, and a
//     backslash-newline pair is removed (line continuation);
//   - single quotes keep every character up to the next single quote;
//   - inside double quotes a backslash escapes only $, `, ", \ and newline
//     (backslash-newline is removed); before any other character it is kept;
//   - quotes can join parts of one word (a'b'"c" is abc), and an empty quoted
//     string is an empty word.
//
// Nothing is expanded: $VAR, ~, globs, and operators such as ; | & > are
// ordinary characters.
//
// It returns an error wrapping [ErrCommandSyntax] for an unterminated quote
// or a trailing backslash, and one wrapping [ErrEmptyCommand] when s holds no
// word. The error text never repeats s.
func SplitCommand(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool // cur holds a word, possibly empty ("")
		i       int
		quoteAt = -1
	)
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
			i++
		case c == '\\':
			if i+1 >= len(s) {
				return nil, fmt.Errorf("%w: trailing backslash", ErrCommandSyntax)
			}
			if s[i+1] == '\n' {
				i += 2 // line continuation
				continue
			}
			// Keep the next character (a whole UTF-8 sequence is copied
			// byte by byte over the following iterations).
			cur.WriteByte(s[i+1])
			inWord = true
			i += 2
		case c == '\'':
			quoteAt = i
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated single quote at byte %d", ErrCommandSyntax, quoteAt)
			}
			cur.WriteString(s[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			quoteAt = i
			i++
			closed := false
			for i < len(s) {
				d := s[i]
				if d == '"' {
					closed = true
					i++
					break
				}
				if d == '\\' && i+1 < len(s) {
					switch s[i+1] {
					case '$', '`', '"', '\\':
						cur.WriteByte(s[i+1])
						i += 2
						continue
					case '\n':
						i += 2
						continue
					}
				}
				cur.WriteByte(d)
				i++
			}
			if !closed {
				return nil, fmt.Errorf("%w: unterminated double quote at byte %d", ErrCommandSyntax, quoteAt)
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, ErrEmptyCommand
	}
	return words, nil
}
