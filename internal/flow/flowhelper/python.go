package flowhelper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// Interpreter is how the helper program is run: Path [Arg] -B program ….
type Interpreter struct {
	Path string // absolute
	Arg  string // "" or a shebang flag group such as "-s"
}

var (
	pythonBase = lazyre.New(`^python(3(\.[0-9]{1,2})?)?$`)
	shebangArg = lazyre.New(`^-[sEIPB]+$`)
)

// FindPython finds Flow's Python interpreter (docs/helper.md, "Finding the
// interpreter"). With an
// explicit flowPython (--flow-python) it is looked up on PATH when it has no
// separator and made absolute; hello validates it later. Otherwise the first
// word of the Flow command (flowCommand, e.g. "openadapt-flow" or
// --flow-cli's first word) is resolved on path and its first 256 bytes are
// read: an absolute python shebang with an optional -[sEIPB]+ argument,
// "#!/usr/bin/env python3", distlib's /bin/sh trampoline, or a native binary
// named like python. Anything else, realflow's #!/bin/sh wrapper included,
// fails with the message that asks for --flow-python.
func FindPython(flowPython, flowCommand, path string) (Interpreter, error) {
	if flowPython != "" {
		p, err := lookPath(flowPython, path)
		if err != nil {
			e := startedWith(flowPython, err)
			e.Stage = StageInterpreter
			return Interpreter{}, e
		}
		return Interpreter{Path: p}, nil
	}
	fail := func(err error) (Interpreter, error) {
		return Interpreter{}, &StartError{Stage: StageInterpreter, Err: err,
			Msg: "the Flow Python interpreter could not be determined from " + flowCommand + "; pass --flow-python"}
	}
	// The program itself missing is its own message: the fix is to install
	// Flow, not to name an interpreter of a Flow that is not there.
	notFound := func(err error) (Interpreter, error) {
		name := flowCommand
		if name == "" {
			name = flowrun.DefaultFlowCommand
		}
		return Interpreter{}, &StartError{Stage: StageInterpreter, Err: fmt.Errorf("%w: %w", flowrun.ErrFlowNotFound, err),
			Msg: MsgFlowNotFound(name)}
	}
	if flowCommand == "" {
		return notFound(errors.New("no Flow command"))
	}
	resolved, err := lookPath(flowCommand, path)
	if err != nil {
		return notFound(err)
	}
	if runtime.GOOS == "windows" {
		dir := filepath.Dir(resolved)
		for _, cand := range []string{filepath.Join(dir, "python.exe"), filepath.Join(filepath.Dir(dir), "python.exe")} {
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
				return Interpreter{Path: cand}, nil
			}
		}
		return fail(errors.New("no python.exe beside the Flow command"))
	}
	head, err := readHead(resolved)
	if err != nil {
		return fail(err)
	}
	in, err := parseHead(head, filepath.Base(resolved), resolved, path)
	if err != nil {
		return fail(err)
	}
	return in, nil
}

// MsgFlowNotFound is the message for a Flow command (its first word,
// name) that cannot be found: it names the program and the fix.
func MsgFlowNotFound(name string) string {
	return name + " was not found: install openadapt-flow so that it is on PATH, or pass --flow-cli (the Flow command) or --flow-python (the Python interpreter of a Flow install)"
}

// flowCommandLimit only refuses absurd sizes: the first 256 bytes are read
// (a native python binary is several MB).
var flowCommandLimit = fsutil.Limit{Kind: "Flow command", Max: 1 << 30}

// readHead reads the first 256 bytes of the resolved Flow command (a
// regular file; symlinks are followed, as exec would).
func readHead(p string) ([]byte, error) {
	f, _, err := fsutil.Open(p, flowCommandLimit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

// parseHead decides from the first bytes of the resolved Flow command.
func parseHead(head []byte, base, resolved, path string) (Interpreter, error) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		// A native binary: accepted when its own name is a python.
		if pythonBase().MatchString(base) {
			return Interpreter{Path: resolved}, nil
		}
		return Interpreter{}, errors.New("not a script and not a python binary")
	}
	lines := strings.SplitN(string(head), "\n", 3)
	first := strings.TrimRight(strings.TrimPrefix(lines[0], "#!"), "\r")
	words := strings.Fields(first)
	if len(words) == 0 {
		return Interpreter{}, errors.New("empty shebang")
	}
	interp := words[0]
	switch {
	case interp == "/usr/bin/env":
		if len(words) != 2 || !pythonBase().MatchString(words[1]) {
			return Interpreter{}, errors.New("env shebang without a single python name")
		}
		p, err := lookPath(words[1], path)
		if err != nil {
			return Interpreter{}, err
		}
		return Interpreter{Path: p}, nil
	case interp == "/bin/sh" && len(words) == 1 && len(lines) >= 2:
		// distlib's long-path trampoline:
		//   #!/bin/sh
		//   '''exec' INTERP "$0" "$@"
		t := strings.TrimRight(lines[1], "\r")
		const pre = `'''exec' `
		const post = ` "$0" "$@"`
		if !strings.HasPrefix(t, pre) || !strings.HasSuffix(t, post) {
			return Interpreter{}, errors.New("a /bin/sh wrapper, not distlib's trampoline")
		}
		p := strings.TrimSuffix(strings.TrimPrefix(t, pre), post)
		if len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"' {
			p = p[1 : len(p)-1]
		}
		if !filepath.IsAbs(p) || !pythonBase().MatchString(filepath.Base(p)) {
			return Interpreter{}, errors.New("trampoline interpreter is not an absolute python")
		}
		return Interpreter{Path: p}, nil
	case filepath.IsAbs(interp) && pythonBase().MatchString(filepath.Base(interp)):
		switch len(words) {
		case 1:
			return Interpreter{Path: interp}, nil
		case 2:
			if shebangArg().MatchString(words[1]) {
				return Interpreter{Path: interp, Arg: words[1]}, nil
			}
		}
		return Interpreter{}, errors.New("unsupported shebang argument")
	}
	return Interpreter{}, errors.New("shebang is not a python interpreter")
}

// lookPath resolves name on the PATH value path (not the server's own
// environment: the child's), returning an absolute path.
func lookPath(name, path string) (string, error) {
	if strings.ContainsRune(name, os.PathSeparator) || (runtime.GOOS == "windows" && strings.ContainsRune(name, '/')) {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", err
		}
		return abs, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // never the CWD
		}
		cand := filepath.Join(dir, name)
		if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return cand, nil
		}
		if runtime.GOOS == "windows" {
			if _, err := exec.LookPath(cand + ".exe"); err == nil {
				return cand + ".exe", nil
			}
		}
	}
	return "", fmt.Errorf("%s: not found on PATH", name)
}
