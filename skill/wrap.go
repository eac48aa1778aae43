package skill

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/adrg/frontmatter"
	"gopkg.in/yaml.v2"

	"github.com/OpenAdaptAI/openadapt-agent/templates"
)

// AppendixMarker is the first line of the appendix this package adds. Emit
// cuts a SKILL.md at the last line equal to it before wrapping again, so
// wrapping is idempotent and a newer agent replaces an older appendix.
const AppendixMarker = "<!-- openadapt-agent:skill-appendix v1 -->"

// legacyMarker is the heading the Python package appended without a marker.
const legacyMarker = "## Invoking via MCP (openadapt-agent)"

// Compatibility is the fixed `compatibility` value of every wrapped skill.
const Compatibility = "Requires openadapt-flow on PATH for replay; the governed MCP path also requires openadapt-agent on PATH."

// Metadata keys written by [Wrap], in their (sorted) output order.
const (
	MetaAgentVersion  = "openadapt-agent-version"
	MetaBundleStatus  = "openadapt-bundle-status"
	MetaBundleVersion = "openadapt-bundle-version"
	MetaWorkflowID    = "openadapt-workflow-id"
)

// WrapInput is what [Wrap] needs besides the SKILL.md bytes. Every value
// comes from the bundle package or the build; none is protected.
type WrapInput struct {
	// DirName is the skill folder's name; the frontmatter name must equal it.
	DirName string
	// WorkflowID is the opaque id ("workflow_<24 hex>"); the run tool is
	// run_<WorkflowID>.
	WorkflowID string
	// BundleVersion is "sha256:<64 hex>", or "" when the bundle has none
	// (legacy); the metadata key is then omitted.
	BundleVersion string
	// BundleStatus is "verified" or "legacy_unverified".
	BundleStatus string
	// RequiredParams are the parameter names serve requires, in any order;
	// Wrap sorts them by code point.
	RequiredParams []string
	// AgentVersion is the build's version string.
	AgentVersion string
	// Unavailable is serve's reason (bundle.Unavailable) when serve lists
	// the workflow as unavailable; the appendix then says no MCP run tool
	// exists and names none. "" for an available workflow.
	Unavailable string
}

// Wrap turns a Flow-emitted SKILL.md (or one this package already wrapped)
// into the shape of docs/skills.md, Wrap: safe double-quoted frontmatter with
// compatibility and openadapt-* metadata, Flow's body byte for byte, then the
// rendered appendix. Warnings (never repeating protected text) are returned
// for the caller to print.
//
// It returns a [*FindingError] (wrapping [ErrName], [ErrDescription] or
// [ErrFrontmatter]) when the name or description break a skill rule after
// normalisation, and an error wrapping [ErrInvalid] for any other input it
// cannot wrap safely.
func Wrap(src []byte, in WrapInput) (out []byte, warnings []string, err error) {
	// Flow copies step intents into the body verbatim, so a NUL or other
	// C0/C1 control code point can appear there; each becomes U+FFFD (TAB,
	// LF, CR kept) before the file is split and checked, with one warning
	// that counts them and never echoes text. The frontmatter is untouched.
	var nCtl int
	if end := frontmatterEnd(src); end > 0 {
		var body []byte
		if body, nCtl = replaceControls(src[end:]); nCtl > 0 {
			src = append(append([]byte{}, src[:end]...), body...)
		}
	}
	sf, bad := splitFile(src)
	if bad != nil {
		return nil, nil, &FindingError{Finding: *bad}
	}
	name, desc, warns, err := readFrontmatter(sf)
	if err != nil {
		return nil, nil, err
	}
	warnings = append(warnings, warns...)
	// Each control or separator character becomes one space before
	// the skill rules are checked, so desc-ctl never refuses an emit.
	desc = strings.Map(func(r rune) rune {
		if isControlOrSeparator(r) {
			return ' '
		}
		return r
	}, desc)
	var findings []Finding
	findings = append(findings, NameFindings(name, in.DirName)...)
	findings = append(findings, DescriptionFindings(desc)...)
	findings = append(findings, claudeFindings(map[string]string{"name": name, "description": desc})...)
	for _, f := range findings {
		if f.Severity == SeverityError {
			return nil, nil, &FindingError{Finding: f}
		}
		warnings = append(warnings, f.Message)
	}

	body, err := cutAppendix(sf.Body())
	if err != nil {
		return nil, nil, err
	}
	if nCtl > 0 {
		warnings = append(warnings, fmt.Sprintf("SKILL.md body held %d control characters (NUL, C0 or C1); each was replaced by U+FFFD", nCtl))
	}
	if bytes.Contains(body, []byte("\r\n")) {
		warnings = append(warnings, "SKILL.md body uses CRLF line endings; kept as is")
	}

	params := slices.Clone(in.RequiredParams)
	slices.Sort(params) // byte order of UTF-8 = code point order
	for _, p := range params {
		if err := templates.CheckCodeSpan(p); err != nil {
			return nil, nil, fmt.Errorf("%w: a declared parameter name holds a backtick, angle bracket or control character", ErrInvalid)
		}
	}
	meta := map[string]string{
		MetaAgentVersion: in.AgentVersion,
		MetaBundleStatus: in.BundleStatus,
		MetaWorkflowID:   in.WorkflowID,
	}
	if in.BundleVersion != "" {
		meta[MetaBundleVersion] = in.BundleVersion
	}
	fm := renderFrontmatter(name, desc, meta)
	if err := checkRoundTrip(fm, name, desc, meta); err != nil {
		return nil, nil, err
	}
	tmpl, data := "appendix.md.tmpl", map[string]any{"WorkflowID": in.WorkflowID, "RequiredParams": params}
	if in.Unavailable != "" {
		tmpl, data = "appendix-unavailable.md.tmpl", map[string]any{"Reason": in.Unavailable}
	}
	appendix, err := templates.Render(tmpl, data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: rendering the appendix: %w", ErrInvalid, err)
	}
	var b bytes.Buffer
	b.Write(fm)
	b.Write(body)
	b.WriteByte('\n')
	b.Write(appendix)
	return b.Bytes(), warnings, nil
}

// readFrontmatter reads the name and description of the input: Flow's own
// two unquoted lines taken literally (its values are not YAML-escaped), or,
// for a skill this package already wrapped, the decoded frontmatter, which
// must then decode cleanly and hold only allowed keys.
func readFrontmatter(sf *SkillFile) (name, desc string, warnings []string, err error) {
	lines := strings.Split(strings.TrimSuffix(string(sf.Block), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	// Decode with adrg/frontmatter (YAML `---` format only), as every verb
	// does; its rest must be our body.
	var fields yaml.MapSlice
	rest, decErr := frontmatter.Parse(bytes.NewReader(sf.Raw), &fields, yamlFormat)
	if decErr == nil && !bytes.Equal(rest, sf.Body()) {
		decErr = errors.New("frontmatter delimiters are ambiguous")
	}

	// Flow shape: exactly `name: <v1>` then `description: <v2>`. Flow
	// writes them without escaping, so the literal text is authoritative.
	if len(lines) == 2 && strings.HasPrefix(lines[0], "name: ") && strings.HasPrefix(lines[1], "description: ") {
		name = strings.TrimPrefix(lines[0], "name: ")
		desc = strings.TrimPrefix(lines[1], "description: ")
		dn, dd, nOK, dOK := decodedFields(fields)
		switch {
		case decErr != nil:
			warnings = append(warnings, "description contains YAML-significant text; used Flow's literal line")
		default:
			if !nOK || dn != name {
				warnings = append(warnings, "name contains YAML-significant text; used Flow's literal line")
			}
			if !dOK || dd != desc {
				warnings = append(warnings, "description contains YAML-significant text; used Flow's literal line")
			}
		}
		return name, desc, warnings, nil
	}

	// Our own shape (an already-wrapped skill): it must decode cleanly.
	if decErr != nil {
		return "", "", nil, &FindingError{Finding: errf("yaml", "Invalid YAML in frontmatter: %s", yamlMessage(decErr))}
	}
	var dropped []string
	for _, it := range fields {
		k, ok := it.Key.(string)
		if !ok || !slices.Contains(AllowedFields, k) {
			return "", "", nil, &FindingError{Finding: errf("fields",
				"Unexpected fields in frontmatter: %s. Only %s are allowed.", printable(fmt.Sprint(it.Key)), strings.Join(AllowedFields, ", "))}
		}
		switch k {
		case "name", "description", "compatibility", "metadata":
		default:
			dropped = append(dropped, k)
		}
	}
	n, d, nOK, dOK := decodedFields(fields)
	if !nOK || !dOK {
		return "", "", nil, &FindingError{Finding: errf("type", "Field 'name' and field 'description' must be strings")}
	}
	if len(dropped) > 0 {
		warnings = append(warnings, "dropped frontmatter keys: "+strings.Join(dropped, ", "))
	}
	return n, d, warnings, nil
}

// decodedFields returns the decoded name and description and whether each
// is a string.
func decodedFields(fields yaml.MapSlice) (name, desc string, nameOK, descOK bool) {
	for _, it := range fields {
		switch it.Key {
		case "name":
			name, nameOK = it.Value.(string)
		case "description":
			desc, descOK = it.Value.(string)
		}
	}
	return name, desc, nameOK, descOK
}

// cutAppendix returns the body without an appendix: everything before the
// last line equal to the marker (or, without one, the legacy Python
// heading), minus one trailing "\n", our separator. The body must end with
// "\n".
func cutAppendix(body []byte) ([]byte, error) {
	if i := lastLine(body, AppendixMarker); i >= 0 {
		body = bytes.TrimSuffix(body[:i], []byte("\n"))
	} else if i := lastLine(body, legacyMarker); i >= 0 {
		body = bytes.TrimSuffix(body[:i], []byte("\n"))
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, fmt.Errorf("%w: SKILL.md body must end with a newline", ErrLayout)
	}
	return body, nil
}

// lastLine returns the offset of the last line of b equal to s (ignoring a
// trailing "\r"), or -1.
func lastLine(b []byte, s string) int {
	found := -1
	for off := 0; off < len(b); {
		line, rest, _ := cutLine(b[off:])
		if string(line) == s {
			found = off
		}
		off = len(b) - len(rest)
	}
	return found
}

// quote renders a one-line double-quoted YAML scalar. Only \ and " are
// escaped: normalisation already removed control and separator characters.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// renderFrontmatter is a small fixed writer (no yaml.Marshal, which folds
// long lines and picks styles): keys in a fixed order, metadata sorted.
func renderFrontmatter(name, desc string, meta map[string]string) []byte {
	var b strings.Builder
	b.WriteString("---\n")
	b.WriteString("name: " + quote(name) + "\n")
	b.WriteString("description: " + quote(desc) + "\n")
	b.WriteString("compatibility: " + quote(Compatibility) + "\n")
	b.WriteString("metadata:\n")
	keys := make([]string, 0, len(meta))
	for k := range meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString("  " + k + ": " + quote(meta[k]) + "\n")
	}
	b.WriteString("---\n")
	return []byte(b.String())
}

// checkRoundTrip decodes the rendered block again and requires the same
// values (fail closed).
func checkRoundTrip(fm []byte, name, desc string, meta map[string]string) error {
	sf, findings := parseFile(fm)
	fail := fmt.Errorf("%w: the description holds characters that do not survive YAML quoting", ErrDescription)
	if sf == nil || len(findings) > 0 {
		return fail
	}
	var got struct {
		Name          string            `yaml:"name"`
		Description   string            `yaml:"description"`
		Compatibility string            `yaml:"compatibility"`
		Metadata      map[string]string `yaml:"metadata"`
	}
	if err := yaml.UnmarshalStrict(sf.Block, &got); err != nil {
		return fail
	}
	if got.Name != name || got.Description != desc || got.Compatibility != Compatibility || len(got.Metadata) != len(meta) {
		return fail
	}
	for k, v := range meta {
		if got.Metadata[k] != v {
			return fail
		}
	}
	return nil
}

// replaceControls replaces the code points U+0000–U+001F (except TAB, LF,
// CR) and U+0080–U+009F with U+FFFD (code points, not
// bytes; a byte that is not UTF-8 is kept for validation to refuse).
func replaceControls(b []byte) ([]byte, int) {
	n := 0
	var out []byte
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		bad := r != utf8.RuneError || size > 1
		bad = bad && (r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x80 && r <= 0x9f)
		if bad {
			if out == nil {
				out = append(make([]byte, 0, len(b)+8), b[:i]...)
			}
			out = utf8.AppendRune(out, utf8.RuneError)
			n++
		} else if out != nil {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	if out == nil {
		return b, 0
	}
	return out, n
}

// frontmatterEnd is the offset just after the closing "---" line of a file
// that opens with "---", or 0.
func frontmatterEnd(src []byte) int {
	if !bytes.HasPrefix(src, []byte("---")) {
		return 0
	}
	i := bytes.Index(src[3:], []byte("\n---"))
	if i < 0 {
		return 0
	}
	i += 3 + 1
	j := bytes.IndexByte(src[i:], '\n')
	if j < 0 {
		return 0
	}
	return i + j + 1
}
