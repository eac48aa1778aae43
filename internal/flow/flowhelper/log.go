package flowhelper

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// MaxLogBytes caps the protected helper log (docs/helper.md, "The helper
// log").
const MaxLogBytes = 8 << 20

// helperLog is <state>/logs/helper-<instance>.log: 0600, append-only, no
// symlink following, stopped at MaxLogBytes after one marker line. With a
// mirror (--allow-protected-export) each line is also written there
// prefixed "flow-helper: ".
type helperLog struct {
	mu     sync.Mutex
	f      *os.File
	size   int64
	full   bool
	mirror io.Writer
}

func openLog(stateDir, instance string, mirror io.Writer) (*helperLog, string, error) {
	dir := filepath.Join(stateDir, "logs")
	if err := privateDir(dir); err != nil {
		return nil, "", err
	}
	p := filepath.Join(dir, "helper-"+instance+".log")
	// Appended to: never through a link, never a file another user could
	// have planted (fsutil.OpenOurs).
	f, err := fsutil.OpenOurs(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, "", fmt.Errorf("%s is not a regular file", p)
	}
	if st.Mode().Perm()&0o077 != 0 {
		_ = f.Chmod(0o600)
	}
	return &helperLog{f: f, size: st.Size(), mirror: mirror}, p, nil
}

// line appends one line (a trailing newline is added).
func (l *helperLog) line(s string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mirror != nil {
		fmt.Fprintf(l.mirror, "flow-helper: %s\n", s)
	}
	if l.full || l.f == nil {
		return
	}
	if l.size+int64(len(s))+1 > MaxLogBytes {
		l.full = true
		n, _ := l.f.WriteString("[openadapt-agent: helper log reached 8 MiB; later lines dropped]\n")
		l.size += int64(n)
		return
	}
	n, _ := l.f.WriteString(s + "\n")
	l.size += int64(n)
}

// drain copies r (the helper's fds 1 and 2) line by line until EOF.
func (l *helperLog) drain(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			s := string(b)
			if s[len(s)-1] == '\n' {
				s = s[:len(s)-1]
			}
			l.line(s)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func (l *helperLog) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
