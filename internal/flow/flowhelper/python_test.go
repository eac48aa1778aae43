package flowhelper_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// Shebang fixtures (docs/helper.md, "Finding the interpreter").
func TestFindPython(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("POSIX shebangs")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(bin, "python3.11")
	write := func(name, content string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("python3.11", "\x7fELF")
	write("python3", "\x7fELF")
	for _, tc := range []struct {
		name, content string
		want          flowhelper.Interpreter
		ok            bool
	}{
		{"absolute", "#!" + py + "\nimport x\n", flowhelper.Interpreter{Path: py}, true},
		{"absolute -s", "#!" + py + " -s\n", flowhelper.Interpreter{Path: py, Arg: "-s"}, true},
		{"env", "#!/usr/bin/env python3\n", flowhelper.Interpreter{Path: filepath.Join(bin, "python3")}, true},
		{"trampoline", "#!/bin/sh\n'''exec' " + py + " \"$0\" \"$@\"\n' '''\n", flowhelper.Interpreter{Path: py}, true},
		{"trampoline quoted", "#!/bin/sh\n'''exec' \"" + py + "\" \"$0\" \"$@\"\n' '''\n", flowhelper.Interpreter{Path: py}, true},
		{"sh wrapper", "#!/bin/sh\nexec /usr/bin/python3 -m openadapt_flow \"$@\"\n", flowhelper.Interpreter{}, false},
		{"bad arg", "#!" + py + " -c\n", flowhelper.Interpreter{}, false},
		{"two args", "#!" + py + " -s -E\n", flowhelper.Interpreter{}, false},
		{"env -S", "#!/usr/bin/env -S python3 -s\n", flowhelper.Interpreter{}, false},
		{"not python", "#!/usr/bin/perl\n", flowhelper.Interpreter{}, false},
		{"relative", "#!python3\n", flowhelper.Interpreter{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write("openadapt-flow", tc.content)
			got, err := flowhelper.FindPython("", "openadapt-flow", bin)
			if tc.ok {
				if err != nil || got != tc.want {
					t.Fatalf("FindPython = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			var se *flowhelper.StartError
			if !errors.As(err, &se) || se.Msg != "the Flow Python interpreter could not be determined from openadapt-flow; pass --flow-python" {
				t.Fatalf("FindPython = %+v, %v", got, err)
			}
			_ = p
		})
	}
	// A native python binary named as such (--flow-cli "python3 -m openadapt_flow").
	got, err := flowhelper.FindPython("", "python3", bin)
	if err != nil || got.Path != filepath.Join(bin, "python3") {
		t.Errorf("native = %+v, %v", got, err)
	}
	// A missing command is named as missing, with the fix, never as an
	// interpreter that could not be determined.
	for _, cmd := range []string{"no-such-flow", filepath.Join(bin, "no-such-flow"), ""} {
		_, err := flowhelper.FindPython("", cmd, bin)
		var se *flowhelper.StartError
		want := cmd
		if cmd == "" {
			want = "openadapt-flow"
		}
		if !errors.As(err, &se) || !errors.Is(err, flowrun.ErrFlowNotFound) || se.Msg != flowhelper.MsgFlowNotFound(want) ||
			!strings.HasPrefix(se.Msg, want+" was not found: install openadapt-flow") || strings.Contains(se.Msg, "could not be determined") {
			t.Errorf("missing command %q: %v", cmd, err)
		}
	}
	// Explicit --flow-python: looked up on PATH, made absolute.
	got, err = flowhelper.FindPython("python3.11", "ignored", bin)
	if err != nil || got.Path != py {
		t.Errorf("--flow-python = %+v, %v", got, err)
	}
	if _, err := flowhelper.FindPython("nope-python", "ignored", bin); err == nil || err.Error() != "the Flow helper could not be started with nope-python" {
		t.Errorf("--flow-python missing = %v", err)
	}
}

func TestCleanVersion(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"1.32.0": "1.32.0", "1.32.0+local": "1.32.0+local", "": "unknown", "1.32 0": "unknown", "\x1b[31m": "unknown",
		"123456789012345678901234567890123": "unknown"} {
		if got := flowhelper.CleanVersion(in); got != want {
			t.Errorf("CleanVersion(%q) = %q", in, got)
		}
	}
}
