// Package cards reads workflow cards: the operator's `openadapt-card.json`
// in a bundle folder (docs/mcp.md, Workflow cards). A card gives a workflow
// a callable name, a purpose, what "done" means, and per input a
// description and constraints that narrow what Flow declared. Card text is
// shown to agents by design, so every string is validated before it is
// used: the one text validator of internal/labels, length limits, and a
// refusal of text shaped like an identifier (a long digit run, an e-mail
// address, a phone number).
//
// A card is strict JSON (internal/util/pyjson: UTF-8, no BOM, no duplicate
// keys), a regular file of at most [Limit] bytes read without following a
// link; unknown keys are refused at every level. Errors name the rule a
// card breaks, never its text.
package cards

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// FileName is the card's name in a bundle folder.
const FileName = "openadapt-card.json"

// Limit caps a card file; a larger one is refused before it is read.
var Limit = fsutil.Limit{Kind: "workflow card", Max: 16 << 10}

// Text limits, in code points.
const (
	MaxPurpose     = 280 // also the done_means limit; the --labels description's
	MaxDescription = 200 // an input's description
	MaxEnumValue   = 200 // one enum value
	MaxEnumValues  = 64  // values of one enum
	MaxPattern     = 200 // a pattern, in bytes
	maxLength      = 1 << 20
)

// Formats are the input formats a card may give (JSON Schema's names).
var Formats = []string{"date", "date-time"}

// Card is a validated card. Text fields are "" when the card leaves them
// out.
type Card struct {
	// Name is the card's name, ^[a-z][a-z0-9_]{2,63}$, accepted wherever a
	// workflow id is; never starts with "workflow_".
	Name      string
	Purpose   string
	DoneMeans string
	// Inputs holds the card's input entries by Flow's parameter name.
	Inputs map[string]*Input
}

// Input is one input's card entry. Zero fields are unset.
type Input struct {
	Description string
	// Format is "date" or "date-time" (Flow's date type is "date" without
	// a card).
	Format string
	// Pattern is the operator's pattern as written, re the RE2 program
	// that checks it with ECMAScript's meaning (docs/mcp.md, Workflow
	// cards).
	Pattern string
	re      *regexp.Regexp
	// Enum narrows the values; nil when unset.
	Enum []string
	// MinLength and MaxLength bound a string, in code points.
	MinLength, MaxLength *int
	// Minimum and Maximum bound a number; MinimumText and MaximumText are
	// the card's own tokens (the schema shows them).
	Minimum, Maximum         *float64
	MinimumText, MaximumText string
}

// Param is a declared parameter a card may describe.
type Param struct {
	Name string // Flow's name
	Type string // Flow's declared type (bundle.SafeType)
}

// Options say what a card is checked against.
type Options struct {
	// Params are the workflow's declared parameters (no secret one).
	Params []Param
	// Choices returns Flow's declared choices of an enum parameter; it is
	// called only when the card gives that parameter an enum.
	Choices func(name string) ([]string, error)
}

// ErrInvalid is wrapped by every card error.
var ErrInvalid = errors.New("invalid workflow card")

// Error is why a card is refused: the field (a fixed key path such as
// "purpose" or "inputs.*.pattern"; an input is never named) and the rule.
// It never holds text from the card.
type Error struct {
	Field string
	Rule  string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Rule
	}
	return e.Field + ": " + e.Rule
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

func bad(field, rule string) *Error { return &Error{Field: field, Rule: rule} }

// Read reads the card of the bundle folder dir: (nil, nil) when there is
// none. A link, a FIFO, a device, a folder or a file above [Limit] is
// refused before it is read.
func Read(ctx context.Context, dir string, o Options) (*Card, error) {
	data, err := fsutil.ReadFile(ctx, filepath.Join(dir, FileName), Limit, fsutil.NoFollow)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, fsutil.ErrSymlink):
		return nil, bad("", "the card is a symbolic link, which is never followed")
	case errors.Is(err, fsutil.ErrNotRegular):
		return nil, bad("", "the card is not a regular file")
	case errors.Is(err, fsutil.ErrTooLarge):
		return nil, bad("", "the card is larger than "+fsutil.FormatSize(Limit.Max))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, bad("", "the card cannot be read")
	}
	return Parse(data, o)
}

var nameRE = lazyre.New(`^[a-z][a-z0-9_]{2,63}$`)

// Parse parses and validates a card.
func Parse(data []byte, o Options) (*Card, error) {
	d, err := pyjson.Parse(data, pyjson.Options{MaxDepth: 8, MaxIntDigits: 32, Floats: pyjson.FloatRepr})
	if err != nil {
		return nil, bad("", "not strict JSON")
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object {
		return nil, bad("", "not a JSON object")
	}
	c := &Card{Inputs: map[string]*Input{}}
	for k, v := range d.Members(root) {
		switch key := d.Str(k); key {
		case "name":
			s, err := text(d, v, "name", 64)
			if err != nil {
				return nil, err
			}
			if !nameRE().MatchString(s) {
				return nil, bad("name", "must match ^[a-z][a-z0-9_]{2,63}$")
			}
			if strings.HasPrefix(s, "workflow_") {
				return nil, bad("name", "must not start with workflow_ (workflow ids do)")
			}
			c.Name = s
		case "purpose", "done_means":
			s, err := text(d, v, key, MaxPurpose)
			if err != nil {
				return nil, err
			}
			if key == "purpose" {
				c.Purpose = s
			} else {
				c.DoneMeans = s
			}
		case "inputs":
			if err := c.parseInputs(d, v, o); err != nil {
				return nil, err
			}
		default:
			return nil, bad("", "unknown key (only name, purpose, done_means and inputs are allowed)")
		}
	}
	return c, nil
}

func (c *Card) parseInputs(d *pyjson.Doc, v pyjson.V, o Options) error {
	if d.Kind(v) != pyjson.Object {
		return bad("inputs", "not an object")
	}
	types := make(map[string]string, len(o.Params))
	for _, p := range o.Params {
		types[p.Name] = p.Type
	}
	for k, iv := range d.Members(v) {
		name := d.Str(k)
		typ, ok := types[name]
		if !ok {
			return bad("inputs", "names an input the workflow does not declare (keys are Flow's own parameter names; secret parameters are never inputs)")
		}
		in, err := parseInput(d, iv, name, typ, o)
		if err != nil {
			return err
		}
		c.Inputs[name] = in
	}
	return nil
}

func parseInput(d *pyjson.Doc, v pyjson.V, name, typ string, o Options) (*Input, error) {
	const f = "inputs.*"
	if d.Kind(v) != pyjson.Object {
		return nil, bad(f, "not an object")
	}
	number := typ == "number"
	in := &Input{}
	for k, fv := range d.Members(v) {
		switch key := d.Str(k); key {
		case "description":
			s, err := text(d, fv, f+".description", MaxDescription)
			if err != nil {
				return nil, err
			}
			in.Description = s
		case "format":
			s, ok := strOf(d, fv)
			switch {
			case !ok || !slices.Contains(Formats, s):
				return nil, bad(f+".format", "must be date or date-time")
			case number:
				return nil, bad(f+".format", "only a text input takes a format")
			case typ == "date" && s != "date":
				return nil, bad(f+".format", "Flow's date inputs are dates")
			}
			in.Format = s
		case "pattern":
			s, ok := strOf(d, fv)
			switch {
			case !ok || s == "" || len(s) > MaxPattern:
				return nil, bad(f+".pattern", fmt.Sprintf("must be a regular expression of 1 to %d bytes", MaxPattern))
			case number:
				return nil, bad(f+".pattern", "only a text input takes a pattern")
			}
			if err := checkText(f+".pattern", s); err != nil {
				return nil, err
			}
			re, rule := compilePattern(s)
			if re == nil {
				return nil, bad(f+".pattern", rule)
			}
			in.Pattern, in.re = s, re
		case "enum":
			vals, err := enumOf(d, fv, typ)
			if err != nil {
				return nil, err
			}
			in.Enum = vals
		case "minLength", "maxLength":
			if number {
				return nil, bad(f+"."+key, "only a text input takes a length")
			}
			n, ok := intOf(d, fv)
			if !ok || n < 0 || n > maxLength {
				return nil, bad(f+"."+key, "must be a whole number from 0 to "+strconv.Itoa(maxLength))
			}
			if key == "minLength" {
				in.MinLength = &n
			} else {
				in.MaxLength = &n
			}
		case "minimum", "maximum":
			if !number {
				return nil, bad(f+"."+key, "only a number input takes a minimum or maximum")
			}
			x, tok, ok := numberOf(d, fv)
			if !ok {
				return nil, bad(f+"."+key, "must be a finite number")
			}
			if key == "minimum" {
				in.Minimum, in.MinimumText = &x, tok
			} else {
				in.Maximum, in.MaximumText = &x, tok
			}
		default:
			return nil, bad(f, "unknown key (allowed: description, format, pattern, enum, minLength, maxLength, minimum, maximum)")
		}
	}
	switch {
	case in.MinLength != nil && in.MaxLength != nil && *in.MinLength > *in.MaxLength:
		return nil, bad(f, "minLength is above maxLength")
	case in.Minimum != nil && in.Maximum != nil && *in.Minimum > *in.Maximum:
		return nil, bad(f, "minimum is above maximum")
	}
	if in.Enum != nil && typ == "enum" {
		if o.Choices == nil {
			return nil, bad(f+".enum", "the workflow's own choices cannot be read")
		}
		choices, err := o.Choices(name)
		if err != nil {
			return nil, bad(f+".enum", "the workflow's own choices cannot be read")
		}
		if len(choices) > 0 {
			for _, e := range in.Enum {
				if !slices.Contains(choices, e) {
					return nil, bad(f+".enum", "holds a value outside the workflow's own choices (an enum only narrows them)")
				}
			}
		}
	}
	// Every constraint must admit every enum value, or the enum lies.
	for _, e := range in.Enum {
		if typ == "date" && !CalendarDate(e) {
			return nil, bad(f+".enum", "holds a value that is not a date")
		}
		if p := in.CheckString(e); p != "" {
			return nil, bad(f+".enum", "holds a value the input's other constraints refuse")
		}
	}
	return in, nil
}

func enumOf(d *pyjson.Doc, v pyjson.V, typ string) ([]string, error) {
	const f = "inputs.*.enum"
	if typ == "number" {
		return nil, bad(f, "only a text input takes an enum")
	}
	if d.Kind(v) != pyjson.Array || d.Len(v) == 0 || d.Len(v) > MaxEnumValues {
		return nil, bad(f, fmt.Sprintf("must be a list of 1 to %d texts", MaxEnumValues))
	}
	var vals []string
	for e := range d.Elems(v) {
		s, err := text(d, e, f, MaxEnumValue)
		if err != nil {
			return nil, err
		}
		if slices.Contains(vals, s) {
			return nil, bad(f, "holds a value twice")
		}
		vals = append(vals, s)
	}
	return vals, nil
}

// text is a card string: non-empty, at most max code points, accepted by
// the text validator and not shaped like an identifier.
func text(d *pyjson.Doc, v pyjson.V, field string, max int) (string, error) {
	s, ok := strOf(d, v)
	if !ok {
		return "", bad(field, "not a string")
	}
	if strings.TrimSpace(s) == "" {
		return "", bad(field, "empty")
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", bad(field, fmt.Sprintf("%d code points, at most %d allowed", n, max))
	}
	if err := checkText(field, s); err != nil {
		return "", err
	}
	return s, nil
}

// checkText applies the one text validator (internal/labels) and the
// identifier shapes.
func checkText(field, s string) error {
	if err := labels.CheckText(s); err != nil {
		return bad(field, err.Error())
	}
	if shape := IdentifierShape(s); shape != "" {
		return bad(field, "looks like it holds an identifier ("+shape+")")
	}
	return nil
}

var (
	emailRE = lazyre.New(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`)
	phoneRE = lazyre.New(`(^|[^\p{Nd}])\p{Nd}{3}[-. )]+\p{Nd}{3}[-. ]+\p{Nd}{4}($|[^\p{Nd}])`)
)

// IdentifierShape names the identifier shape s has, or "": a run of five
// or more digits, an e-mail address, or a phone number (three digits, a
// separator, three digits, a separator, four digits). It guards against
// accidents, not a classifier of protected data.
func IdentifierShape(s string) string {
	run := 0
	for _, r := range s {
		if isDigit(r) {
			if run++; run >= 5 {
				return "a run of 5 or more digits"
			}
		} else {
			run = 0
		}
	}
	if strings.IndexByte(s, '@') >= 0 && emailRE().MatchString(s) {
		return "an e-mail address"
	}
	if phoneRE().MatchString(s) {
		return "a phone number"
	}
	return ""
}

func isDigit(r rune) bool {
	return '0' <= r && r <= '9' || r > 0x7f && unicode.Is(unicode.Nd, r)
}

func strOf(d *pyjson.Doc, v pyjson.V) (string, bool) {
	return d.Str(v), d.Kind(v) == pyjson.String
}

func intOf(d *pyjson.Doc, v pyjson.V) (int, bool) {
	if !d.IsInt(v) {
		return 0, false
	}
	n, err := strconv.Atoi(string(d.Bytes(v)))
	return n, err == nil
}

func numberOf(d *pyjson.Doc, v pyjson.V) (float64, string, bool) {
	if d.Kind(v) != pyjson.Number {
		return 0, "", false
	}
	tok := string(d.Bytes(v))
	x, err := strconv.ParseFloat(tok, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, "", false
	}
	return x, tok, true
}
