package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
)

// Flow's output in the commands that start a Flow command themselves (skill
// emit) stays on this computer (docs/skills.md, "Flow's output"): each run
// replaces <state>/flow-output/<command>.log, a 0600 file holding the last
// flowOutputKeep bytes of what Flow printed, and a failure's message names
// that file. The terminal shows Flow's lines only with --show-flow-output.
const (
	flowOutputDir  = "flow-output"
	flowOutputKeep = 64 << 10
	// flowOutputShown is how many of stderr's last lines --show-flow-output
	// prints.
	flowOutputShown = 20
)

// flowOutputStateDir is the per-user state folder the log goes in; tests
// replace it.
var flowOutputStateDir = userdirs.StateDir

// flowOutputText is the log's content: Flow's stdout tail, then its stderr,
// each under a heading, cut from the front to the last flowOutputKeep
// bytes (at a character boundary).
func flowOutputText(stdout string, stderr []byte) []byte {
	var b []byte
	b = append(b, "== openadapt-flow stdout (last part) ==\n"...)
	b = append(b, stdout...)
	if len(stdout) > 0 && !strings.HasSuffix(stdout, "\n") {
		b = append(b, '\n')
	}
	b = append(b, "== openadapt-flow stderr ==\n"...)
	b = append(b, stderr...)
	if len(b) > flowOutputKeep {
		b = b[len(b)-flowOutputKeep:]
		// Start at a character boundary.
		i := 0
		for i < len(b) && i < utf8.UTFMax-1 && !utf8.RuneStart(b[i]) {
			i++
		}
		b = b[i:]
	}
	return b
}

// keepFlowOutput writes data to <state>/flow-output/<command>.log, replacing
// the file of the previous run (a new file renamed over it, never a write
// through a link or into another user's file), and returns its path. The
// state folder and flow-output must be folders of this user that no one
// else can write; a folder of ours with group or other bits is tightened to
// 0700, another user's is refused.
func keepFlowOutput(command string, data []byte) (string, error) {
	state, err := flowOutputStateDir()
	if err != nil {
		return "", err
	}
	if err := privateFolder(state, true); err != nil {
		return "", err
	}
	dir := filepath.Join(state, flowOutputDir)
	if err := privateFolder(dir, false); err != nil {
		return "", err
	}
	root, err := fsutil.OpenRoot(dir, dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	name := command + ".log"
	if err := root.WriteFile(name, data, 0o600); err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// privateFolder makes p when it is missing (with its parents when parents
// is set), 0700, and checks it: a real folder, not a link, owned by this
// user, tightened to 0700 when it grants group or other access. A folder of
// another user is refused and left as it is.
func privateFolder(p string, parents bool) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		mk := os.Mkdir
		if parents {
			mk = os.MkdirAll
		}
		if err := mk(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err = os.Lstat(p)
	}
	switch {
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link; remove it", p)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder; remove it", p)
	}
	if uid, ok := fsutil.Owner(fi); ok && uid != os.Geteuid() {
		return fmt.Errorf("%s belongs to another user (uid %d); remove it or set XDG_STATE_HOME", p, uid)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(p, 0o700); err != nil {
			return fmt.Errorf("%s is accessible to other users and could not be made private: %w", p, err)
		}
	}
	return nil
}

// showFlowOutput prints the last flowOutputShown lines of Flow's stderr on
// w, each prefixed "flow: " (--show-flow-output).
func showFlowOutput(w io.Writer, stderr string) {
	if stderr == "" {
		return
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) > flowOutputShown {
		lines = lines[len(lines)-flowOutputShown:]
	}
	for _, l := range lines {
		fmt.Fprintf(w, "flow: %s\n", oneLine(l))
	}
}
