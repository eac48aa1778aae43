package skill

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// TestEmitReplacesControlsInBody: a genuine Flow skill whose step intents
// hold a NUL and other C0/C1 control code points is emitted (before, emit
// refused it although skills-ref accepts it): each becomes U+FFFD, one
// warning counts them without echoing text, everything else is kept.
// validate still refuses NUL in a skill this tool did not write.
func TestEmitReplacesControlsInBody(t *testing.T) {
	c := emitCases["mockmed-triage"]
	src := buildCase(t, c)
	md, _ := os.ReadFile(filepath.Join(src, "SKILL.md"))
	i := bytes.LastIndex(md, []byte("\n1. ")) // a step intent line
	if i < 0 {
		i = len(md) - 1
	}
	planted := []byte("\n1. intent\x00with\x07controls\u0085and\ttab\n")
	md = append(append(append([]byte{}, md[:i]...), planted...), md[i+1:]...)
	os.WriteFile(filepath.Join(src, "SKILL.md"), md, 0o644)
	if rep, err := Validate(src); err == nil && rep.FirstError() == nil {
		t.Fatal("validate accepted a NUL in a skill it did not write")
	}
	var warns []string
	res, err := Emit(context.Background(), emitOpts(src, t.TempDir(), c, &warns))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(res.SkillDir, "SKILL.md"))
	if !bytes.Contains(out, []byte("intent\uFFFDwith\uFFFDcontrols\uFFFDand\ttab")) {
		t.Errorf("controls not replaced one for one:\n%q", out)
	}
	n := 0
	for _, w := range warns {
		if strings.Contains(w, "control characters") {
			n++
			if !strings.Contains(w, "held 3 control characters") || strings.Contains(w, "intent") {
				t.Errorf("warning %q", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d control warnings, want 1: %v", n, warns)
	}
	if rep, err := Validate(res.SkillDir); err != nil || rep.FirstError() != nil {
		t.Errorf("emitted skill does not validate: %v %v", err, rep.FirstError())
	}
}

// TestEmitRefusesUnavailable: a workflow serve lists as unavailable
// (a reserved parameter name here) is refused with serve's reason code;
// with AllowUnavailable the appendix says no run tool exists and names
// none. A legacy bundle with AllowLegacy alone gets that appendix too.
func TestEmitRefusesUnavailable(t *testing.T) {
	c := emitCases["reserved-name"]
	src := buildCase(t, c)
	out := t.TempDir()
	var warns []string
	opt := emitOpts(src, out, c, &warns)
	opt.AllowUnavailable = false
	_, err := Emit(context.Background(), opt)
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Reason != bundle.ReservedParameterName || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if ents, _ := os.ReadDir(out); len(ents) != 0 {
		t.Errorf("refused emit left %d entries", len(ents))
	}
	opt.AllowUnavailable = true
	res, err := Emit(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(res.SkillDir, "SKILL.md"))
	if bytes.Contains(md, []byte("run_workflow_")) || !bytes.Contains(md, []byte("No MCP run tool exists for this workflow")) || !bytes.Contains(md, []byte("reserved_parameter_name")) {
		t.Errorf("appendix of an unavailable workflow:\n%s", md)
	}

	lc := emitCases["no-params"]
	var lw []string
	res, err = Emit(context.Background(), emitOpts(buildCase(t, lc), t.TempDir(), lc, &lw))
	if err != nil {
		t.Fatal(err)
	}
	md, _ = os.ReadFile(filepath.Join(res.SkillDir, "SKILL.md"))
	if bytes.Contains(md, []byte("run_workflow_")) || !bytes.Contains(md, []byte("legacy_unverified")) {
		t.Errorf("legacy appendix names a tool:\n%s", md)
	}
}
