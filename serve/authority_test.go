//go:build unix

package serve

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// TestAuthorityDBRecorded: a stateful server
// records the durable-authority database its Flow children and helper use,
// from the environment it gives them; a read-only server writes nothing.
func TestAuthorityDBRecorded(t *testing.T) {
	a := newAttEnv(t, "")
	o := a.opts()
	o.Environ = append(o.Environ, "HOME=/srv/home-a", "OPENADAPT_DURABLE_AUTHORITY_DB=/srv/db/authority.sqlite3")
	newClosed(t, o)
	state := filepath.Join(a.runsDir, runstore.StateDirName)
	if got := flowhelper.ReadAuthorityRecord(context.Background(), state); got != "/srv/db/authority.sqlite3" {
		t.Fatalf("recorded %q", got)
	}

	// Without the variable: HOME's default, as Flow's _default_db_path.
	o.Environ = append(a.opts().Environ, "HOME=/srv/home-b")
	newClosed(t, o)
	if got := flowhelper.ReadAuthorityRecord(context.Background(), state); got != "/srv/home-b/.openadapt/durable-authority/authority.sqlite3" {
		t.Fatalf("recorded %q", got)
	}

	// Read-only: no state at all.
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "ro"})
	newClosed(t, e.opts())
	if got := flowhelper.ReadAuthorityRecord(context.Background(), filepath.Join(e.runsDir, runstore.StateDirName)); got != "" {
		t.Fatalf("read-only server recorded %q", got)
	}
}

// newClosed starts a server (startup writes its state) and closes it.
func newClosed(t *testing.T, o Options) {
	t.Helper()
	srv, err := New(o, &syncBuffer{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv.Close()
}
