//go:build unix

package serve

import (
	"strings"
	"testing"
)

// TestModeAttendedPreset: --mode attended starts the attended decisions
// (through the fake helper) and the run tools.
func TestModeAttendedPreset(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	o := a.opts()
	o.AllowAttendedActions, o.Mode = false, ModeAttended
	s := elicitSession(t, o, "2025-11-25", accept)
	if b := s.srv.Banner(); !strings.Contains(b, "run tools enabled; attended decisions enabled") {
		t.Fatalf("banner %q", b)
	}
	for _, want := range []string{"reject_attention", "teach_attention", "escalate_attention"} {
		if s.tools[want] == nil {
			t.Errorf("no %s", want)
		}
	}
	s.runTool()
}
