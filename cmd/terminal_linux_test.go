package cmd

import (
	"os"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/ptytest"
)

// TestIsTerminal: a pseudo-terminal is a terminal; /dev/null, a character
// device, is not, so `skill remove` with stdin at /dev/null refuses with
// exit 2 instead of prompting.
func TestIsTerminal(t *testing.T) {
	_, slave := ptytest.Open(t)
	if !isTerminal(slave) {
		t.Error("a pseudo-terminal is not reported as a terminal")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Error("/dev/null is reported as a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(r) {
		t.Error("a pipe is reported as a terminal")
	}
}
