package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkillRemoveConfirm: on a terminal, skill remove lists what it will
// delete on stderr and asks; "y" removes, anything else (or end of input)
// removes nothing and exits 1 with not_confirmed.
func TestSkillRemoveConfirm(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	src := filepath.Join("..", "testdata", "skill", "lockhash", "minimal")
	if code := Run(context.Background(), []string{"skill", "install", "-g", "-a", "claude-code", src}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("install exit %d", code)
	}
	canon := filepath.Join(home, ".agents", "skills", "minimal")
	remove := func(answer string, extra ...string) (int, string, string) {
		var out, errb bytes.Buffer
		io := &IO{In: strings.NewReader(answer), Out: &out, Err: &errb, InTTY: true}
		code := run(context.Background(), append([]string{"skill", "remove", "minimal", "-g"}, extra...), io)
		return code, out.String(), errb.String()
	}
	for _, answer := range []string{"n\n", "\n", "", "yes please\n"} {
		code, out, errb := remove(answer)
		if code != exitFailed || out != "" || !strings.Contains(errb, "[y/N]") || !strings.Contains(errb, "delete folder "+canon) {
			t.Fatalf("answer %q: exit %d stdout %q stderr %q", answer, code, out, errb)
		}
		if _, err := os.Stat(filepath.Join(canon, "SKILL.md")); err != nil {
			t.Fatalf("answer %q removed the skill", answer)
		}
	}
	code, out, errb := remove("n\n", "--json")
	if code != exitFailed || !strings.Contains(out, `"code": "not_confirmed"`) {
		t.Fatalf("declined --json: exit %d %q %q", code, out, errb)
	}
	code, out, errb = remove("Y\n")
	if code != 0 || !strings.Contains(out, "removed folder "+canon) || !strings.Contains(out, "removed symlink "+filepath.Join(home, ".claude", "skills", "minimal")) {
		t.Fatalf("confirmed: exit %d %q %q", code, out, errb)
	}
	if _, err := os.Lstat(canon); err == nil {
		t.Fatal("confirmed removal left the copy")
	}
}

// TestSkillRemoveCompletesNames: shell completion of skill remove offers
// the installed skills of the scope, not the ones already named.
func TestSkillRemoveCompletesNames(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	src := filepath.Join("..", "testdata", "skill", "lockhash")
	for _, n := range []string{"minimal", "order-mix"} {
		if code := Run(context.Background(), []string{"skill", "install", "-g", "-a", "codex", filepath.Join(src, n)}, nil, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
			t.Fatalf("install %s: exit %d", n, code)
		}
	}
	var out bytes.Buffer
	Run(context.Background(), []string{"__complete", "skill", "remove", "-g", "minimal", ""}, nil, &out, &bytes.Buffer{})
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || lines[0] != "order-mix" {
		t.Fatalf("completion %q", out.String())
	}
}
