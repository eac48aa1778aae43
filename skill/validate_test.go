package skill

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeSkill writes a skill folder named dir under a temp root and returns
// its path.
func writeSkill(t *testing.T, dir, skillMD string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), dir)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "SKILL.md"), []byte(skillMD), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, string(f.Severity[0])+":"+f.ID)
	}
	return out
}

const okBody = "\n# Demo\n\nBody.\n"

func TestValidateRules(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name string
		dir  string
		md   string
		want []string
	}{
		{"valid", "demo", "---\nname: demo\ndescription: Does a thing.\n---\n" + okBody, nil},
		{"valid all keys", "demo", "---\nname: demo\ndescription: d\nlicense: MIT\ncompatibility: needs x\nallowed-tools: Bash\nmetadata:\n  k: \"v\"\n---\n", nil},
		{"bom", "demo", "\ufeff---\nname: demo\ndescription: d\n---\n", []string{"e:bom"}},
		{"not utf8", "demo", "---\nname: demo\ndescription: \xff\n---\n", []string{"e:utf8"}},
		{"nul", "demo", "---\nname: demo\ndescription: a\x00\n---\n", []string{"e:utf8"}},
		{"no frontmatter", "demo", "# Demo\n", []string{"e:frontmatter"}},
		{"leading blank line", "demo", "\n---\nname: demo\ndescription: d\n---\n", []string{"e:frontmatter"}},
		{"dashes with space", "demo", "--- \nname: demo\ndescription: d\n---\n", []string{"e:frontmatter"}},
		{"not closed", "demo", "---\nname: demo\ndescription: d\n", []string{"e:frontmatter"}},
		{"ambiguous close", "demo", "---\nname: demo\n ---\ndescription: d\n---\n", []string{"e:frontmatter"}},
		{"crlf", "demo", "---\r\nname: demo\r\ndescription: d\r\n---\r\n\r\n# x\r\n", []string{"w:crlf"}},
		{"colon description", "demo", "---\nname: demo\ndescription: Replay 'a: b' now\n---\n", []string{"e:yaml"}},
		{"empty description", "demo", "---\nname: demo\ndescription:\n---\n", []string{"e:desc"}},
		{"list", "demo", "---\n- a\n- b\n---\n", []string{"e:yaml"}},
		{"duplicate", "demo", "---\nname: demo\ndescription: d\nname: demo\n---\n", []string{"e:yaml-dup"}},
		{"flow mapping", "demo", "---\nname: demo\ndescription: d\nmetadata: {a: b}\n---\n", []string{"e:yaml-flow"}},
		{"flow list", "demo", "---\nname: demo\ndescription: d\nallowed-tools: [Bash, Read]\n---\n", []string{"e:yaml-flow", "e:type"}},
		{"extra keys", "demo", "---\nname: demo\ndescription: d\nversion: 1\nauthor: x\n---\n", []string{"e:fields"}},
		{"numeric name", "123", "---\nname: 123\ndescription: d\n---\n", []string{"e:type"}},
		{"bool name", "no", "---\nname: no\ndescription: d\n---\n", []string{"e:type"}},
		{"compat number", "demo", "---\nname: demo\ndescription: d\ncompatibility: 42\n---\n", []string{"e:type"}},
		{"missing name", "demo", "---\ndescription: d\n---\n", []string{"e:name-len"}},
		{"missing description", "demo", "---\nname: demo\n---\n", []string{"e:desc"}},
		{"65 chars", long, "---\nname: " + long + "\ndescription: d\n---\n", []string{"e:name-len"}},
		{"upper", "Upper-Case", "---\nname: Upper-Case\ndescription: d\n---\n", []string{"e:name-case", "e:name-chars"}},
		{"cafe", "café", "---\nname: café\ndescription: d\n---\n", []string{"e:name-chars"}},
		{"edge", "-demo", "---\nname: -demo\ndescription: d\n---\n", []string{"e:name-edge"}},
		{"double hyphen", "double--hyphen", "---\nname: double--hyphen\ndescription: d\n---\n", []string{"e:name-dash2"}},
		{"bad dir", "bad-dir", "---\nname: demo\ndescription: d\n---\n", []string{"e:name-dir"}},
		{"1025 chars", "demo", "---\nname: demo\ndescription: " + strings.Repeat("x", 1025) + "\n---\n", []string{"e:desc-len"}},
		{"1024 chars", "demo", "---\nname: demo\ndescription: " + strings.Repeat("x", 1024) + "\n---\n", nil},
		{"utf16 length", "demo", "---\nname: demo\ndescription: " + strings.Repeat("🩺", 513) + "\n---\n", []string{"e:desc-len"}},
		{"dashes", "demo", "---\nname: demo\ndescription: \"a --- b\"\n---\n", []string{"e:desc-dashes"}},
		{"control", "demo", "---\nname: demo\ndescription: \"a\\tb\"\n---\n", []string{"e:desc-ctl"}},
		{"line separator", "demo", "---\nname: demo\ndescription: \"a\\Lb\"\n---\n", []string{"e:desc-ctl"}},
		{"compat empty", "demo", "---\nname: demo\ndescription: d\ncompatibility: \"\"\n---\n", []string{"e:compat-len"}},
		{"compat long", "demo", "---\nname: demo\ndescription: d\ncompatibility: " + strings.Repeat("c", 501) + "\n---\n", []string{"e:compat-len"}},
		{"metadata scalar", "demo", "---\nname: demo\ndescription: d\nmetadata: x\n---\n", []string{"e:metadata"}},
		{"metadata nested", "demo", "---\nname: demo\ndescription: d\nmetadata:\n  a:\n    b: c\n---\n", []string{"e:metadata"}},
		{"metadata number", "demo", "---\nname: demo\ndescription: d\nmetadata:\n  a: 1.0\n---\n", []string{"w:metadata"}},
		{"xml", "demo", "---\nname: demo\ndescription: a <b> c\n---\n", []string{"w:claude-xml"}},
		{"claude word", "claude-helper", "---\nname: claude-helper\ndescription: d\n---\n", []string{"w:claude-word"}},
		{"long body", "demo", "---\nname: demo\ndescription: d\n---\n" + strings.Repeat("line\n", 501), []string{"w:body-lines"}},
		{"big body", "demo", "---\nname: demo\ndescription: d\n---\n" + strings.Repeat("x", 20008) + "\n", []string{"w:body-tokens"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeSkill(t, tt.dir, tt.md)
			rep, err := Validate(p)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if diff := cmp.Diff(want, ids(rep.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", diff, rep.Findings)
			}
			for _, f := range rep.Findings {
				if strings.Contains(f.Message, "xxxxxxxx") || strings.Contains(f.Message, "Does a thing") {
					t.Errorf("finding repeats the description: %s", f.Message)
				}
			}
		})
	}
}

func TestValidateLayout(t *testing.T) {
	t.Run("lowercase skill.md", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "demo")
		os.MkdirAll(p, 0o755)
		os.WriteFile(filepath.Join(p, "skill.md"), []byte("---\nname: demo\ndescription: d\n---\n"), 0o644)
		rep, err := Validate(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"e:skill-md"}, ids(rep.Findings)); diff != "" {
			t.Error(diff)
		}
		if !strings.Contains(rep.Findings[0].Message, "found skill.md") {
			t.Error(rep.Findings[0].Message)
		}
	})
	t.Run("missing", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "demo")
		os.MkdirAll(p, 0o755)
		rep, err := Validate(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"e:skill-md"}, ids(rep.Findings)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("special files", func(t *testing.T) {
		p := writeSkill(t, "demo", "---\nname: demo\ndescription: d\n---\n")
		os.Symlink("SKILL.md", filepath.Join(p, "link"))
		rep, err := Validate(p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"w:tree-special"}, ids(rep.Findings)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		p := writeSkill(t, "demo", "---\nname: demo\ndescription: d\n---\n")
		if err := mkfifo(filepath.Join(p, "pipe")); err != nil {
			t.Skip(err)
		}
		rep, _ := Validate(p)
		if diff := cmp.Diff([]string{"w:tree-special"}, ids(rep.Findings)); diff != "" {
			t.Error(diff)
		}
	})
	t.Run("path is SKILL.md", func(t *testing.T) {
		p := writeSkill(t, "demo", "---\nname: demo\ndescription: d\n---\n")
		rep, err := Validate(filepath.Join(p, "SKILL.md"))
		if err != nil || !rep.Valid(true) || rep.Name != "demo" {
			t.Fatalf("rep=%v err=%v", rep, err)
		}
	})
	t.Run("missing path", func(t *testing.T) {
		_, err := Validate(filepath.Join(t.TempDir(), "nope"))
		if !errors.Is(err, ErrPath) {
			t.Fatalf("err = %v, want ErrPath", err)
		}
	})
	t.Run("other file", func(t *testing.T) {
		p := writeSkill(t, "demo", "---\nname: demo\ndescription: d\n---\n")
		os.WriteFile(filepath.Join(p, "x.txt"), nil, 0o644)
		if _, err := Validate(filepath.Join(p, "x.txt")); !errors.Is(err, ErrPath) {
			t.Fatalf("err = %v, want ErrPath", err)
		}
	})
}

// Every Flow-emitted vector decodes; the unicode one is invalid under
// yaml.v2 (U+2028 is a YAML 1.1 line break), which is why emit normalises.
func TestValidateFlowVectors(t *testing.T) {
	want := map[string][]string{
		"mockmed-triage-v3/mockmed-triage":                            {},
		"encounter-loop/save-encounter-for-each":                      {},
		"program-subflows/program-with-subflows":                      {},
		"unicode-params/berpr-fung-triage-note-a-b-q-end-second-line": {"e:yaml"},
	}
	for rel, w := range want {
		rep, err := Validate(filepath.Join("..", "testdata", "flow", "skills", rel))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, ids(rep.Findings)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", rel, diff)
		}
	}
}

func TestFindingErrorSentinels(t *testing.T) {
	for id, want := range map[string]error{
		"name-dir": ErrName, "desc-len": ErrDescription, "skill-md": ErrLayout, "yaml": ErrFrontmatter, "bom": ErrFrontmatter,
	} {
		err := error(&FindingError{Finding{ID: id, Severity: SeverityError, Message: "m"}})
		if !errors.Is(err, want) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: errors.Is(%v) false", id, want)
		}
	}
}
