package skill

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/adrg/frontmatter"
	"gopkg.in/yaml.v2"
)

// Severity of a [Finding].
type Severity string

const (
	// SeverityError makes a skill invalid.
	SeverityError Severity = "error"
	// SeverityWarning is reported but does not make a skill invalid (unless
	// validation is strict).
	SeverityWarning Severity = "warning"
)

// Finding is one rule result (docs/skills.md, Skill rules). ID is the rule id
// (`name-dir`, `desc-len`, …). Message names the field and never repeats the
// description or the body.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// FindingError is an error-severity [Finding] returned as an error. It wraps
// the sentinel for its rule: [ErrName], [ErrDescription], [ErrLayout] or
// [ErrFrontmatter] (all of which wrap [ErrInvalid]).
type FindingError struct{ Finding Finding }

func (e *FindingError) Error() string { return e.Finding.Message + " [" + e.Finding.ID + "]" }

// Unwrap returns the sentinel of the rule.
func (e *FindingError) Unwrap() error { return sentinelFor(e.Finding.ID) }

func sentinelFor(id string) error {
	switch {
	case strings.HasPrefix(id, "name"):
		return ErrName
	case strings.HasPrefix(id, "desc"):
		return ErrDescription
	case id == "skill-md", id == "tree-special", strings.HasPrefix(id, "body"):
		return ErrLayout
	default:
		return ErrFrontmatter
	}
}

func errf(id, format string, a ...any) Finding {
	return Finding{ID: id, Severity: SeverityError, Message: fmt.Sprintf(format, a...)}
}

func warnf(id, format string, a ...any) Finding {
	return Finding{ID: id, Severity: SeverityWarning, Message: fmt.Sprintf(format, a...)}
}

// SkillFile is a parsed SKILL.md: the raw bytes, the frontmatter block and
// its decoded top-level mapping, and where the body starts.
type SkillFile struct {
	// Raw is the whole file.
	Raw []byte
	// Block is the frontmatter text between the two `---` lines.
	Block []byte
	// Fields is the decoded block, in file order.
	Fields yaml.MapSlice
	// BodyOffset is the offset of the first byte after the closing `---`
	// line.
	BodyOffset int
}

// Body returns every byte after the closing `---` line.
func (f *SkillFile) Body() []byte { return f.Raw[f.BodyOffset:] }

// Get returns the decoded value of a top-level key.
func (f *SkillFile) Get(key string) (any, bool) {
	for _, it := range f.Fields {
		if k, ok := it.Key.(string); ok && k == key {
			return it.Value, true
		}
	}
	return nil, false
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// yamlFormat is the only format accepted: adrg/frontmatter's defaults would
// also accept TOML (`+++`) and JSON (`{`, `;;;`).
var yamlFormat = frontmatter.NewFormat("---", "---", yaml.Unmarshal)

// ParseSkillFile runs the byte checks of the skill rules (`utf8`, `bom`,
// `frontmatter`) and then decodes the frontmatter with adrg/frontmatter
// (`yaml`, `yaml-dup`, `yaml-flow`). It returns a [*FindingError] for the
// first rule broken; the error wraps [ErrFrontmatter].
func ParseSkillFile(data []byte) (*SkillFile, error) {
	sf, findings := parseFile(data)
	for _, f := range findings {
		if f.Severity == SeverityError {
			return nil, &FindingError{Finding: f}
		}
	}
	return sf, nil
}

// splitFile runs the byte checks (`utf8`, `bom`, `frontmatter`) and splits
// the file on our own: the block between the first line (exactly `---`) and
// the next line that is exactly `---` (LF or CRLF).
func splitFile(data []byte) (*SkillFile, *Finding) {
	// (1) Byte checks run before adrg/frontmatter: its Parse returns no
	// error and an untouched value for a BOM, a missing or an unclosed
	// block, and skips leading blank lines.
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		f := errf("utf8", "SKILL.md must be valid UTF-8 without NUL bytes")
		return nil, &f
	}
	if bytes.HasPrefix(data, bom) {
		f := errf("bom", "SKILL.md starts with a byte order mark; remove it")
		return nil, &f
	}
	first, rest, _ := cutLine(data)
	if string(first) != "---" {
		f := errf("frontmatter", "SKILL.md must start with YAML frontmatter (---)")
		return nil, &f
	}
	off := len(data) - len(rest)
	blockStart := off
	closeAt, bodyOffset := -1, -1
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		if string(line) == "---" {
			closeAt = off
			bodyOffset = len(data) - len(next)
			break
		}
		off = len(data) - len(next)
		rest = next
	}
	if closeAt < 0 {
		f := errf("frontmatter", "frontmatter is not closed")
		return nil, &f
	}
	return &SkillFile{Raw: data, Block: data[blockStart:closeAt], BodyOffset: bodyOffset}, nil
}

// parseFile returns the parsed file, or nil when it cannot be decoded, and
// the parse findings in rule order.
func parseFile(data []byte) (*SkillFile, []Finding) {
	sf, bad := splitFile(data)
	if bad != nil {
		return nil, []Finding{*bad}
	}
	bodyOffset := sf.BodyOffset

	// (2) adrg/frontmatter with only the YAML `---` format.
	var fields yaml.MapSlice
	libRest, err := frontmatter.Parse(bytes.NewReader(data), &fields, yamlFormat)
	if err != nil {
		var v any
		if yaml.Unmarshal(sf.Block, &v) == nil {
			return nil, []Finding{errf("yaml", "SKILL.md frontmatter must be a YAML mapping")}
		}
		return nil, []Finding{errf("yaml", "Invalid YAML in frontmatter: %s", yamlMessage(err))}
	}
	// (3) Our split and the library's must agree: the library trims spaces
	// around delimiter lines, so a line like " ---" could close it early.
	if !bytes.Equal(libRest, data[bodyOffset:]) {
		return nil, []Finding{errf("frontmatter", "frontmatter delimiters are ambiguous (a line inside the block looks like ---)")}
	}
	// A scalar or a list decodes into a MapSlice with an error above; an
	// empty block decodes to an empty mapping.
	sf.Fields = fields

	var findings []Finding
	if dup := duplicateKeys(sf.Block); len(dup) > 0 {
		findings = append(findings, errf("yaml-dup", "duplicate frontmatter keys: %s", strings.Join(dup, ", ")))
	}
	if flowStyle(sf.Block) {
		findings = append(findings, errf("yaml-flow", "frontmatter uses flow-style {…} or […] values; use block style"))
	}
	return sf, findings
}

// cutLine splits the first line off b. line excludes the "\n" and a "\r"
// before it. ok reports whether a "\n" was found.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.TrimSuffix(b, []byte("\r")), nil, false
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:], true
}

var backquoted = lazyre.New("`[^`]*`")

// yamlMessage is the parser's message without any quoted input: yaml.v2
// quotes offending values between backticks.
func yamlMessage(err error) string {
	msg := backquoted().ReplaceAllString(err.Error(), "value")
	msg = strings.TrimPrefix(msg, "yaml: ")
	return strings.Join(strings.Fields(msg), " ")
}

// topKey matches a top-level block-mapping key line and captures the key.
var topKey = lazyre.New(`^([^\s#\-'"][^:]*|"[^"]*"|'[^']*'):(\s|$)`)

// duplicateKeys scans the key lines itself: yaml.v2 silently keeps the last
// value of a duplicated key.
func duplicateKeys(block []byte) []string {
	seen := map[string]bool{}
	var dups []string
	for _, line := range strings.Split(string(block), "\n") {
		m := topKey().FindStringSubmatch(strings.TrimSuffix(line, "\r"))
		if m == nil {
			continue
		}
		k := strings.Trim(strings.TrimSpace(m[1]), `"'`)
		if seen[k] && !contains(dups, k) {
			dups = append(dups, k)
		}
		seen[k] = true
	}
	return dups
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// flowValue matches a mapping value or a list item that opens a flow
// collection. A plain YAML scalar cannot start with [ or {, so this never
// matches a string value.
var flowValue = lazyre.New(`^\s*(?:-\s+)*(?:(?:[^\s#\-'"\[{][^:]*|"[^"]*"|'[^']*'):\s+|-\s+)[\[{]|^[\[{]`)

// flowStyle reports whether the block uses a flow-style {…} or […] value,
// which the Python skills-ref (strictyaml) rejects.
func flowStyle(block []byte) bool {
	for _, line := range strings.Split(string(block), "\n") {
		if flowValue().MatchString(line) {
			return true
		}
	}
	return false
}
