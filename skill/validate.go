package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"gopkg.in/yaml.v2"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// Limits of the skill rules (docs/skills.md, Skill rules).
const (
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
	// Body size guidance (warnings only).
	MaxBodyLines  = 500
	MaxBodyTokens = 5000
)

// AllowedFields are the frontmatter keys of the Agent Skills spec.
var AllowedFields = []string{"allowed-tools", "compatibility", "description", "license", "metadata", "name"}

// ErrPath is returned (wrapped) by [Validate] when the path to validate does
// not exist, cannot be read, or is neither a folder nor a SKILL.md file. It is
// an input error, not an invalid skill.
var ErrPath = errors.New("cannot read skill path")

// Report is the result of validating one skill.
type Report struct {
	// Path is the path as given.
	Path string `json:"path"`
	// Name is the frontmatter name when it decoded as a string, else "".
	Name string `json:"name"`
	// Findings in rule order (docs/skills.md, Skill rules).
	Findings []Finding `json:"findings"`
}

// Count returns the number of error and warning findings.
func (r *Report) Count() (errs, warns int) {
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			errs++
		} else {
			warns++
		}
	}
	return errs, warns
}

// Valid reports whether the skill has no error findings, and, when strict,
// no warning findings either.
func (r *Report) Valid(strict bool) bool {
	e, w := r.Count()
	return e == 0 && (!strict || w == 0)
}

// FirstError returns the first error finding as a [*FindingError], or nil.
func (r *Report) FirstError() error {
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			return &FindingError{Finding: f}
		}
	}
	return nil
}

// Validate checks the skill at path, a skill folder or its SKILL.md, against
// every skill rule (docs/skills.md, Skill rules). Rule results are findings in
// the report; the error is non-nil (wrapping [ErrPath]) only when path cannot
// be read.
func Validate(path string) (*Report, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, path, unwrapPathError(err))
	}
	dir := path
	if !fi.IsDir() {
		if !strings.EqualFold(filepath.Base(path), "SKILL.md") {
			return nil, fmt.Errorf("%w: %s is neither a folder nor a SKILL.md file", ErrPath, path)
		}
		dir = filepath.Dir(path)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, path, err)
	}
	rep, err := validateDir(abs, filepath.Base(abs))
	if rep != nil {
		rep.Path = path
	}
	return rep, err
}

// validateDir validates the folder abs as if it were named dirName.
func validateDir(abs, dirName string) (*Report, error) {
	path := abs
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, path, unwrapPathError(err))
	}
	r := &Report{Path: path, Findings: []Finding{}}
	if f, ok := skillMDFinding(entries); !ok {
		r.Findings = append(r.Findings, f)
		return r, nil
	}
	data, err := readSkillMD(filepath.Join(abs, "SKILL.md"))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, path, unwrapPathError(err))
	}
	sf, findings := CheckSkillMD(data, dirName)
	r.Findings = append(r.Findings, findings...)
	if sf != nil {
		if n, ok := sf.Get("name"); ok {
			if s, ok := n.(string); ok {
				r.Name = s
			}
		}
	}
	if rel, err := firstSpecial(abs); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, path, unwrapPathError(err))
	} else if rel != "" {
		r.Findings = append(r.Findings, warnf("tree-special",
			"the tree holds a symlink, device, FIFO or socket at %s; pack and install refuse these", rel))
	}
	return r, nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// skillMDFinding checks that the folder holds a file named exactly SKILL.md.
func skillMDFinding(entries []os.DirEntry) (Finding, bool) {
	lower := ""
	for _, e := range entries {
		if e.Name() == "SKILL.md" {
			return Finding{}, true
		}
		if strings.EqualFold(e.Name(), "SKILL.md") {
			lower = e.Name()
		}
	}
	if lower != "" {
		return errf("skill-md", "found %s; the file must be named exactly SKILL.md", lower), false
	}
	return errf("skill-md", "Missing required file: SKILL.md"), false
}

// firstSpecial returns the slash path of the first symlink, device, FIFO or
// socket under root in walk order, or "".
func firstSpecial(root string) (string, error) {
	found := ""
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&(fs.ModeSymlink|fs.ModeDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			rel, _ := filepath.Rel(root, p)
			found = filepath.ToSlash(rel)
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

// CheckSkillMD runs every file-level skill rule on the bytes
// of a SKILL.md whose folder is named dirName (empty skips `name-dir`). It
// returns the parsed file (nil when it does not decode) and the findings in
// rule order.
func CheckSkillMD(data []byte, dirName string) (*SkillFile, []Finding) {
	sf, findings := parseFile(data)
	if sf == nil {
		return nil, findings
	}
	findings = append(findings, fieldFindings(sf, dirName)...)
	findings = append(findings, bodyFindings(sf)...)
	return sf, findings
}

// fieldFindings covers `fields` through `claude-word`.
func fieldFindings(sf *SkillFile, dirName string) []Finding {
	var out []Finding
	var extra []string
	for _, it := range sf.Fields {
		k, ok := it.Key.(string)
		if !ok {
			k = fmt.Sprint(it.Key)
		}
		if !ok || !slices.Contains(AllowedFields, k) {
			extra = append(extra, printable(k))
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		out = append(out, errf("fields", "Unexpected fields in frontmatter: %s. Only %s are allowed.",
			strings.Join(extra, ", "), strings.Join(AllowedFields, ", ")))
	}

	strs := map[string]string{}
	for _, k := range []string{"name", "description", "license", "compatibility", "allowed-tools"} {
		v, ok := sf.Get(k)
		if !ok {
			continue
		}
		if s, isStr := v.(string); isStr {
			strs[k] = s
			continue
		}
		if v == nil && (k == "name" || k == "description") {
			strs[k] = "" // reported as empty below
			continue
		}
		out = append(out, errf("type", "Field '%s' must be a string", k))
	}

	if name, ok := strs["name"]; ok {
		out = append(out, NameFindings(name, dirName)...)
	} else if _, present := sf.Get("name"); !present {
		out = append(out, errf("name-len", "Missing required field in frontmatter: name"))
	}
	if desc, ok := strs["description"]; ok {
		out = append(out, DescriptionFindings(desc)...)
	} else if _, present := sf.Get("description"); !present {
		out = append(out, errf("desc", "Missing required field in frontmatter: description"))
	}
	if c, ok := strs["compatibility"]; ok {
		if n := charLen(c); n == 0 || n > MaxCompatibilityLen {
			out = append(out, errf("compat-len", "Field 'compatibility' must be 1-%d characters (%d chars)", MaxCompatibilityLen, n))
		}
	}
	if v, ok := sf.Get("metadata"); ok {
		out = append(out, metadataFindings(v)...)
	}
	out = append(out, claudeFindings(strs)...)
	return out
}

// NameFindings checks a skill name: `name-len`, `name-case`, `name-chars`,
// `name-edge`, `name-dash2` and, when dirName is not empty, `name-dir`.
func NameFindings(name, dirName string) []Finding {
	var out []Finding
	shown := printable(name)
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		out = append(out, errf("name-len", "Field 'name' must be a non-empty string"))
	case n > MaxNameLen:
		out = append(out, errf("name-len", "Skill name '%s' exceeds %d character limit (%d chars)", shown, MaxNameLen, n))
	}
	if name != strings.ToLower(name) {
		out = append(out, errf("name-case", "Skill name '%s' must be lowercase", shown))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			out = append(out, errf("name-chars", "Skill name '%s' contains invalid characters; only a-z, 0-9 and - are allowed", shown))
			break
		}
	}
	if strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
		out = append(out, errf("name-edge", "Skill name cannot start or end with a hyphen"))
	}
	if strings.Contains(name, "--") {
		out = append(out, errf("name-dash2", "Skill name cannot contain consecutive hyphens"))
	}
	if dirName != "" && dirName != name {
		out = append(out, errf("name-dir", "Directory name '%s' must match skill name '%s'", printable(dirName), shown))
	}
	return out
}

// DescriptionFindings checks a description: `desc`, `desc-len`,
// `desc-dashes` and `desc-ctl`. No message repeats the description.
func DescriptionFindings(desc string) []Finding {
	if strings.TrimSpace(desc) == "" {
		return []Finding{errf("desc", "Field 'description' must be a non-empty string")}
	}
	var out []Finding
	if n := charLen(desc); n > MaxDescriptionLen {
		out = append(out, errf("desc-len", "Description exceeds %d character limit (%d chars)", MaxDescriptionLen, n))
	}
	if strings.Contains(desc, "---") {
		out = append(out, errf("desc-dashes", "Field 'description' must not contain --- (validators split SKILL.md on it)"))
	}
	if strings.IndexFunc(desc, isControlOrSeparator) >= 0 {
		out = append(out, errf("desc-ctl", "Field 'description' must not contain control characters, U+2028 or U+2029"))
	}
	return out
}

func metadataFindings(v any) []Finding {
	ms, ok := v.(yaml.MapSlice)
	if !ok {
		return []Finding{errf("metadata", "Field 'metadata' must be a mapping")}
	}
	var out []Finding
	for _, it := range ms {
		k, ok := it.Key.(string)
		if !ok {
			out = append(out, errf("metadata", "Field 'metadata' must have string keys"))
			continue
		}
		switch it.Value.(type) {
		case string:
		case yaml.MapSlice, []any, map[any]any:
			out = append(out, errf("metadata", "metadata key '%s' must have a string value, not a nested mapping or list", printable(k)))
		default:
			out = append(out, warnf("metadata", "metadata key '%s' has a non-string value; quote it", printable(k)))
		}
	}
	return out
}

func claudeFindings(strs map[string]string) []Finding {
	var out []Finding
	for _, k := range []string{"name", "description"} {
		if strings.ContainsAny(strs[k], "<>") {
			out = append(out, warnf("claude-xml", "Field '%s' contains < or >; Claude's upload validator rejects it", k))
		}
	}
	lname := strings.ToLower(strs["name"])
	if strings.Contains(lname, "claude") || strings.Contains(lname, "anthropic") {
		out = append(out, warnf("claude-word", "Skill name contains 'claude' or 'anthropic'; Claude's upload validator rejects it"))
	}
	return out
}

func bodyFindings(sf *SkillFile) []Finding {
	var out []Finding
	body := sf.Body()
	lines := bytes.Count(body, []byte("\n"))
	if len(body) > 0 && body[len(body)-1] != '\n' {
		lines++
	}
	if lines > MaxBodyLines {
		out = append(out, warnf("body-lines", "SKILL.md body has %d lines; keep it under %d", lines, MaxBodyLines))
	}
	if tokens := len(body) / 4; tokens > MaxBodyTokens {
		out = append(out, warnf("body-tokens", "SKILL.md body is about %d tokens; keep it under %d", tokens, MaxBodyTokens))
	}
	if bytes.Contains(sf.Raw, []byte("\r\n")) {
		out = append(out, warnf("crlf", "SKILL.md uses CRLF line endings; LF is preferred"))
	}
	return out
}

// charLen counts as both validators do, taking the larger: Python counts
// code points, JavaScript UTF-16 units.
func charLen(s string) int {
	return max(utf8.RuneCountInString(s), len(utf16.Encode([]rune(s))))
}

// isControlOrSeparator reports C0, DEL, C1, U+2028 and U+2029.
func isControlOrSeparator(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u2028' || r == '\u2029'
}

// printable makes a name safe to show on one line.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
}

// readSkillMD reads a SKILL.md as a regular file of at most the SKILL.md
// cap, without following a final link.
func readSkillMD(p string) ([]byte, error) {
	return fsutil.ReadFile(context.Background(), p, fsutil.SkillMD, fsutil.NoFollow)
}
