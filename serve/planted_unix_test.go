//go:build unix

package serve

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// TestPlantedStateFilesRefused: a server that runs Flow tightens a shared
// runs folder, then refuses (exit 2, naming the file and the fix) an audit
// log or idempotency key file another user could have planted there: a
// hard link to a file elsewhere (which the append would change), a
// group/other write bit, another owner. The file elsewhere is unchanged.
// Before, the audit log was appended through the link and kept the
// planted mode, and the key was adopted.
func TestPlantedStateFilesRefused(t *testing.T) {
	t.Parallel()
	plant := map[string]func(t *testing.T, p string) (ok bool, unchanged func()){
		"hard link": func(t *testing.T, p string) (bool, func()) {
			elsewhere := filepath.Join(t.TempDir(), "victim")
			const precious = "0123456789abcdef0123456789abcdef"
			os.WriteFile(elsewhere, []byte(precious), 0o600)
			return os.Link(elsewhere, p) == nil, func() {
				if b, _ := os.ReadFile(elsewhere); string(b) != precious {
					t.Errorf("the linked file changed: %q", b)
				}
			}
		},
		"writable by others": func(t *testing.T, p string) (bool, func()) {
			os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef"), 0o600)
			return os.Chmod(p, 0o666) == nil, func() {}
		},
		"another owner": func(t *testing.T, p string) (bool, func()) {
			os.WriteFile(p, []byte("0123456789abcdef0123456789abcdef"), 0o600)
			return os.Geteuid() == 0 && os.Chown(p, 4242, 4242) == nil, func() {}
		},
	}
	fixes := map[string]string{"hard link": "break the link", "writable by others": "chmod go-w", "another owner": "move it aside"}
	for how, mk := range plant {
		for _, file := range []string{"audit.jsonl", "idem.key"} {
			t.Run(how+"/"+file, func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				// A shared runs folder, as another user could have left it.
				state := filepath.Join(e.runsDir, runstore.StateDirName)
				os.MkdirAll(state, 0o777)
				os.Chmod(e.runsDir, 0o777)
				os.Chmod(state, 0o777)
				p := filepath.Join(state, file)
				ok, unchanged := mk(t, p)
				if !ok {
					t.Skip("cannot plant here")
				}
				o := e.opts()
				o.AllowRun = true
				_, err := New(o, io.Discard)
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.Contains(ce.Msg, p) || !strings.Contains(ce.Msg, fixes[how]) {
					t.Fatalf("New = %v, want a refusal naming %s and the fix", err, p)
				}
				if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o700 {
					t.Errorf("state folder not tightened: %v", fi.Mode())
				}
				unchanged()
			})
		}
	}
	// An explicit --audit-log that is a hard link is refused the same way.
	e := newEnv(t)
	elsewhere := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(elsewhere, []byte("keep"), 0o600)
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	if os.Link(elsewhere, p) != nil {
		t.Skip("hard links")
	}
	o := e.opts()
	o.AuditLog = p
	if _, err := New(o, io.Discard); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("New = %v", err)
	}
	if b, _ := os.ReadFile(elsewhere); string(b) != "keep" {
		t.Errorf("the linked file changed: %q", b)
	}
}
