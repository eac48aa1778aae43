//go:build unix

package runstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// plantings are the three ways a file another user could control ends up
// in a state folder before it was made private: a second hard link (to a
// file elsewhere), a group/other write bit, another owner (needs root).
// Each plants body at p and returns false when it cannot be made here.
var plantings = map[string]func(t *testing.T, p, body string) bool{
	"hard link": func(t *testing.T, p, body string) bool {
		elsewhere := filepath.Join(t.TempDir(), "elsewhere")
		write(t, elsewhere, body)
		return os.Link(elsewhere, p) == nil
	},
	"writable by others": func(t *testing.T, p, body string) bool {
		write(t, p, body)
		return os.Chmod(p, 0o666) == nil
	},
	"another owner": func(t *testing.T, p, body string) bool {
		write(t, p, body)
		return os.Geteuid() == 0 && os.Chown(p, 4242, 4242) == nil
	},
}

// TestPlantedRecordsRefused: a run record or kept stderr tail planted in
// the state folder is never adopted: reading it is ErrUnreadable (naming
// why), State.Record ignores it, and reconciling leaves a planted running
// record alone instead of freezing it (and signalling its process group).
func TestPlantedRecordsRefused(t *testing.T) {
	for name, plant := range plantings {
		t.Run(name, func(t *testing.T) {
			runs := filepath.Join(t.TempDir(), "runs")
			st := prepare(t, runs)
			records := filepath.Join(st.Dir(), "runs")
			running := runningRecord(idA, "2026-12-01T10:00:00Z")
			if !plant(t, filepath.Join(records, idA+".json"), running) ||
				!plant(t, filepath.Join(records, idB+".stderr"), "planted") {
				t.Skip("cannot plant here")
			}
			write(t, filepath.Join(records, idB+".json"), terminalRecord(idB, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
			s := open(t, runs)
			if _, err := s.Get(context.Background(), idA); !errors.Is(err, ErrUnreadable) {
				t.Errorf("Get = %v, want unreadable", err)
			}
			if _, kept, err := s.Stderr(context.Background(), idB); !errors.Is(err, ErrUnreadable) || kept {
				t.Errorf("Stderr = %v %v, want unreadable", kept, err)
			}
			if r := st.Record(idA); r != nil {
				t.Errorf("State.Record adopted a planted record")
			}
			if err := st.Lock("2222222222222222"); err != nil {
				t.Fatal(err)
			}
			defer st.Unlock()
			st.Reconcile(Outcome{Status: flowrun.StatusInterrupted, MessageKey: "interrupted"})
			if data, _ := os.ReadFile(filepath.Join(records, idA+".json")); string(data) != running {
				t.Errorf("a planted record was rewritten: %s", data)
			}
		})
	}
}

// TestPlantedIdemKeyRefused: an idem.key planted in the state folder is
// refused with an error naming the file and the fix, and left as it is.
func TestPlantedIdemKeyRefused(t *testing.T) {
	for name, plant := range plantings {
		t.Run(name, func(t *testing.T) {
			st := prepare(t, filepath.Join(t.TempDir(), "runs"))
			p := filepath.Join(st.Dir(), "idem.key")
			key := strings.Repeat("k", 32)
			if !plant(t, p, key) {
				t.Skip("cannot plant here")
			}
			var err error
			synctest.Test(t, func(t *testing.T) { _, err = st.Bindings() }) // a second link is waited on (fake time)
			if !errors.Is(err, ErrBindingKey) || !errors.Is(err, fsutil.ErrNotOurs) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "fix:") {
				t.Fatalf("Bindings = %v, want a refusal naming %s and the fix", err, p)
			}
			if data, _ := os.ReadFile(p); string(data) != key {
				t.Fatal("the planted key was replaced")
			}
		})
	}
}

// TestPlantedBindingRefused: a binding planted under a known key is
// refused at once (no wait for a writer), never redirecting the key.
func TestPlantedBindingRefused(t *testing.T) {
	for name, plant := range plantings {
		t.Run(name, func(t *testing.T) {
			st := prepare(t, filepath.Join(t.TempDir(), "runs"))
			b, err := st.Bindings()
			if err != nil {
				t.Fatal(err)
			}
			if !plant(t, b.path("retry-key-0000000001"), `{"digest":"d","run_id":"`+idB+`","created_at":"x"}`) {
				t.Skip("cannot plant here")
			}
			var got *Binding
			synctest.Test(t, func(t *testing.T) { got, err = b.Lookup("retry-key-0000000001") })
			if got != nil || !errors.Is(err, ErrBindingUnreadable) || !errors.Is(err, fsutil.ErrNotOurs) {
				t.Fatalf("Lookup = %+v %v", got, err)
			}
		})
	}
}

// TestIdemKeyBeingPublished: a key file that another server is still
// publishing by a hard link (two links for a moment) is waited for, then
// used.
func TestIdemKeyBeingPublished(t *testing.T) {
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	p := filepath.Join(st.Dir(), "idem.key")
	tmp := filepath.Join(st.Dir(), ".idem.key.tmp-000000000000")
	write(t, tmp, strings.Repeat("k", 32))
	if err := os.Link(tmp, p); err != nil {
		t.Skip("hard links:", err)
	}
	synctest.Test(t, func(t *testing.T) {
		go func() {
			time.Sleep(bindingReadGrace / 2)
			os.Remove(tmp)
		}()
		b, err := st.Bindings()
		if err != nil || string(b.key) != strings.Repeat("k", 32) {
			t.Fatalf("Bindings = %v", err)
		}
	})
}
