package runstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

func prepare(t *testing.T, runs string) *State {
	t.Helper()
	st, err := Prepare(runs)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return st
}

// TestPrepareCreatesPrivateFolders: a missing runs folder is created with
// its state folder and every subfolder, all 0700.
func TestPrepareCreatesPrivateFolders(t *testing.T) {
	t.Parallel()
	st := prepare(t, filepath.Join(t.TempDir(), "new", "runs"))
	if !filepath.IsAbs(st.RunsDir()) || st.Dir() != filepath.Join(st.RunsDir(), StateDirName) {
		t.Fatalf("RunsDir %q, Dir %q", st.RunsDir(), st.Dir())
	}
	for _, sub := range []string{"", "runs", "idem", "tmp", "owners"} {
		fi, err := os.Stat(filepath.Join(st.Dir(), sub))
		if err != nil || !fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o700) {
			t.Errorf("%q: %v %v", sub, fi, err)
		}
	}
}

// TestPrepareTightens: a pre-existing 0777 runs folder and state folder
// (and group-readable subfolders) of this user are tightened to 0700.
func TestPrepareTightens(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits")
	}
	runs := filepath.Join(t.TempDir(), "runs")
	state := filepath.Join(runs, StateDirName)
	os.MkdirAll(filepath.Join(state, "runs"), 0o755)
	for _, d := range []string{runs, state} {
		os.Chmod(d, 0o777)
	}
	os.Chmod(filepath.Join(state, "runs"), 0o750)
	prepare(t, runs)
	for _, d := range []string{runs, state, filepath.Join(state, "runs"), filepath.Join(state, "idem")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode().Perm(), err)
		}
	}
}

// TestPrepareRefusals: a runs folder that is a link or a file, or a state
// folder that is a link, is a *PrepareError naming the runs folder, and
// nothing is created through the link.
func TestPrepareRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o700)
	os.Symlink(target, filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	linkedState := filepath.Join(dir, "linked-state")
	os.Mkdir(linkedState, 0o700)
	os.Symlink(target, filepath.Join(linkedState, StateDirName))
	for _, p := range []string{filepath.Join(dir, "link"), filepath.Join(dir, "file"), linkedState} {
		_, err := Prepare(p)
		var pe *PrepareError
		if !errors.As(err, &pe) || pe.Path != p {
			t.Errorf("%s: %v", p, err)
		}
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("something was created through a link: %v", ents)
	}
}

// TestReadOnlyState: a read-only State accepts a missing runs folder
// (creating nothing), refuses an unsafe one without changing it, and reads
// records.
func TestReadOnlyState(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing")
	st, err := ReadOnly(missing)
	if err != nil {
		t.Fatalf("missing: %v", err)
	}
	if st.Record(idA) != nil {
		t.Error("a record in a missing folder")
	}
	if _, err := os.Lstat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a read-only State created %s", missing)
	}
	runs, records := newRunsDir(t)
	write(t, filepath.Join(records, idA+".json"), terminalRecord(idA, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z"))
	st, err = ReadOnly(runs)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.Record(idA); r == nil || r.Phase != PhaseTerminal {
		t.Fatalf("Record = %+v", r)
	}
	if runtime.GOOS == "windows" {
		return
	}
	state := filepath.Join(runs, StateDirName)
	os.Chmod(state, 0o777)
	_, err = ReadOnly(runs)
	var ue *UnsafeDirError
	if !errors.As(err, &ue) || ue.Path != state {
		t.Fatalf("unsafe: %v", err)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o777 {
		t.Errorf("a read-only State changed %s", state)
	}
}

// TestRecordWriteRead: a written record reads back equal; an invalid id is
// refused before any path is built; a malformed or unreadable record is no
// record.
func TestRecordWriteRead(t *testing.T) {
	t.Parallel()
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	f, err := ParseFile([]byte(runningRecord(idA, "2026-12-01T10:00:00Z")), idA)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.WriteRecord(f); err != nil {
		t.Fatal(err)
	}
	got := st.Record(idA)
	if got == nil || got.RunID != idA || got.Phase != PhaseRunning || got.Owner != f.Owner {
		t.Fatalf("Record = %+v", got)
	}
	if fi, err := os.Stat(filepath.Join(st.Dir(), "runs", idA+".json")); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Errorf("record file %v %v", fi, err)
	}
	bad := *f
	bad.RunID = "../" + idA
	if err := st.WriteRecord(&bad); !errors.Is(err, ErrInvalidRunID) {
		t.Errorf("WriteRecord(bad id) = %v", err)
	}
	if err := st.WriteStderrTail("../x", []byte("x")); !errors.Is(err, ErrInvalidRunID) {
		t.Errorf("WriteStderrTail(bad id) = %v", err)
	}
	write(t, filepath.Join(st.Dir(), "runs", idB+".json"), `{"schema_version":1}`)
	for _, id := range []string{idB, idC, "../" + idA} {
		if r := st.Record(id); r != nil {
			t.Errorf("Record(%s) = %+v, want none", id, r)
		}
	}
}

// TestStderrTailWritten: the kept tail is the one Store.Stderr reads, 0600,
// replaced whole on each write.
func TestStderrTailWritten(t *testing.T) {
	t.Parallel()
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	for _, tail := range []string{"first tail\n", "second\n"} {
		if err := st.WriteStderrTail(idA, []byte(tail)); err != nil {
			t.Fatal(err)
		}
	}
	data, kept, err := open(t, st.RunsDir()).Stderr(t.Context(), idA)
	if err != nil || !kept || string(data) != "second\n" {
		t.Fatalf("Stderr = %q %v %v", data, kept, err)
	}
}

// TestOwnerLock: the owner's own lock counts as alive, another State's
// held lock too, a released or never-taken one does not; a second lock of
// the same id is refused.
func TestOwnerLock(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	a, b := prepare(t, runs), prepare(t, runs)
	const ida, idb = "0123456789abcdef", "fedcba9876543210"
	if err := a.Lock(ida); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ida); err == nil {
		t.Fatal("the same owner id was locked twice")
	}
	if err := b.Lock("not-an-owner"); err == nil {
		t.Fatal("an invalid owner id was locked")
	}
	if err := b.Lock(idb); err != nil {
		t.Fatal(err)
	}
	if a.Owner() != ida || !a.OwnerAlive(ida) || !b.OwnerAlive(ida) || !a.OwnerAlive(idb) {
		t.Fatal("held locks are not alive")
	}
	if a.OwnerAlive("1111111111111111") || a.OwnerAlive("../x") || a.OwnerAlive("") {
		t.Fatal("an absent or invalid owner is alive")
	}
	b.Unlock()
	b.Unlock()
	if runtime.GOOS != "windows" && a.OwnerAlive(idb) {
		t.Fatal("a released lock is alive")
	}
	if _, err := os.Lstat(filepath.Join(runs, StateDirName, "owners", idb+".lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the released lock file stays: %v", err)
	}
	a.Unlock()
}

// TestReconcile: the running record of a dead owner becomes interrupted,
// a live owner's running record and a terminal record stay as they are,
// a dead owner's lock file goes, and parameter files are kept only for
// runs of live owners.
func TestReconcile(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	live, st := prepare(t, runs), prepare(t, runs)
	const liveID, selfID, deadID = "1111111111111111", "2222222222222222", "0123456789abcdef"
	if err := live.Lock(liveID); err != nil {
		t.Fatal(err)
	}
	defer live.Unlock()
	records := filepath.Join(runs, StateDirName, "runs")
	write(t, filepath.Join(records, idA+".json"), runningRecord(idA, "2026-12-01T10:00:00Z")) // dead owner
	write(t, filepath.Join(records, idB+".json"), strings.Replace(runningRecord(idB, "2026-12-01T10:00:00Z"), `"owner":"`+deadID, `"owner":"`+liveID, 1))
	terminal := terminalRecord(idC, "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z")
	write(t, filepath.Join(records, idC+".json"), terminal)
	write(t, filepath.Join(runs, StateDirName, "owners", deadID+".lock"), "")
	for _, id := range []string{idA, idB, idC} {
		write(t, filepath.Join(st.ParamsDir(), flowrun.ParamsFileName(id)), "{}")
	}
	if err := st.Lock(selfID); err != nil {
		t.Fatal(err)
	}
	defer st.Unlock()
	interrupted := Outcome{Status: flowrun.StatusInterrupted, MessageKey: "interrupted"}
	st.Reconcile(interrupted)

	if r := st.Record(idA); r == nil || r.Phase != PhaseTerminal || r.Outcome.Status != flowrun.StatusInterrupted || r.EndedAt == nil {
		t.Errorf("dead owner's run: %+v", r)
	}
	if r := st.Record(idB); r == nil || r.Phase != PhaseRunning {
		t.Errorf("live owner's run: %+v", r)
	}
	if data, _ := os.ReadFile(filepath.Join(records, idC+".json")); string(data) != terminal {
		t.Errorf("a terminal record changed: %s", data)
	}
	if _, err := os.Lstat(filepath.Join(runs, StateDirName, "owners", deadID+".lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a dead owner's lock file stays: %v", err)
	}
	for id, keep := range map[string]bool{idA: false, idB: true, idC: false} {
		_, err := os.Lstat(filepath.Join(st.ParamsDir(), flowrun.ParamsFileName(id)))
		if kept := err == nil; kept != keep {
			t.Errorf("parameter file of %s kept %v, want %v", id, kept, keep)
		}
	}
}

// TestBindingsKeyOnce: idem.key is created once; every State of the folder
// (concurrently too) uses the same key, so digests and bindings agree.
func TestBindingsKeyOnce(t *testing.T) {
	t.Parallel()
	runs := filepath.Join(t.TempDir(), "runs")
	prepare(t, runs)
	var wg sync.WaitGroup
	got := make([]*Bindings, 8)
	for i := range got {
		wg.Go(func() {
			b, err := prepare(t, runs).Bindings()
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = b
		})
	}
	wg.Wait()
	url := "https://example.test/"
	want := got[0].Digest("wf", map[string]string{"note": "a"}, &url)
	for _, b := range got[1:] {
		if b == nil || b.Digest("wf", map[string]string{"note": "a"}, &url) != want {
			t.Fatal("two States of one folder disagree on the binding key")
		}
	}
	key, err := os.ReadFile(filepath.Join(runs, StateDirName, "idem.key"))
	if err != nil || len(key) != 32 {
		t.Fatalf("idem.key: %d bytes, %v", len(key), err)
	}
}

// TestBindingsKeyUnusable: an idem.key of the wrong size is refused, not
// replaced.
func TestBindingsKeyUnusable(t *testing.T) {
	t.Parallel()
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	write(t, filepath.Join(st.Dir(), "idem.key"), "short")
	if _, err := st.Bindings(); !errors.Is(err, ErrBindingKey) {
		t.Fatalf("Bindings = %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(st.Dir(), "idem.key")); string(data) != "short" {
		t.Fatal("the key file was replaced")
	}
}

// TestBindingDigest pins the canonical call the digest covers: a fixed key
// gives a fixed digest; each part of the call changes it; HTML characters
// are not escaped (a binding from an earlier build still matches).
func TestBindingDigest(t *testing.T) {
	t.Parallel()
	b := &Bindings{key: []byte(strings.Repeat("k", 32))}
	url := "https://example.test/?a=1&b=<2>"
	base := b.Digest("wf_base", map[string]string{"note": "a&b", "z": "1"}, &url)
	want := b.mac([]byte(`{"v":1,"tool":"run","workflow":"wf_base","params":{"note":"a&b","z":"1"},"url":"https://example.test/?a=1&b=<2>"}`))
	if base != want {
		t.Fatalf("digest %s, want %s", base, want)
	}
	other := "https://example.test/other"
	for name, d := range map[string]string{
		"workflow": b.Digest("wf_other", map[string]string{"note": "a&b", "z": "1"}, &url),
		"params":   b.Digest("wf_base", map[string]string{"note": "a&b"}, &url),
		"url":      b.Digest("wf_base", map[string]string{"note": "a&b", "z": "1"}, &other),
		"no url":   b.Digest("wf_base", map[string]string{"note": "a&b", "z": "1"}, nil),
	} {
		if d == base {
			t.Errorf("a different %s gives the same digest", name)
		}
	}
}

// TestBindingsPublishLookup: an unbound key is nil; a published binding
// reads back; a second publish is fs.ErrExist; the file name carries no
// key text.
func TestBindingsPublishLookup(t *testing.T) {
	t.Parallel()
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	b, err := st.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	const key = "retry-key-secret-0001"
	if got, err := b.Lookup(key); got != nil || err != nil {
		t.Fatalf("unbound: %+v %v", got, err)
	}
	bd := Binding{Digest: "d", RunID: idA, CreatedAt: "2026-12-01T10:00:00Z"}
	if err := b.Publish(key, bd); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(key, Binding{Digest: "e", RunID: idB}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Publish = %v", err)
	}
	if got, err := b.Lookup(key); err != nil || got == nil || *got != bd {
		t.Fatalf("Lookup = %+v %v", got, err)
	}
	ents, _ := os.ReadDir(filepath.Join(st.Dir(), "idem"))
	if len(ents) != 1 || strings.Contains(ents[0].Name(), "retry") {
		t.Fatalf("binding files %v", ents)
	}
}

// TestBindingUnreadable: a binding file that stays unusable is retried for
// the grace period (fake time), then ErrBindingUnreadable; one that
// becomes whole within it is read.
func TestBindingUnreadable(t *testing.T) {
	st := prepare(t, filepath.Join(t.TempDir(), "runs"))
	b, err := st.Bindings()
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		write(t, b.path("broken-key-00000001"), `{"digest":`)
		start := time.Now()
		if _, err := b.Lookup("broken-key-00000001"); !errors.Is(err, ErrBindingUnreadable) {
			t.Fatalf("Lookup = %v", err)
		}
		if waited := time.Since(start); waited < bindingReadGrace {
			t.Errorf("gave up after %v", waited)
		}
		p := b.path("late-key-0000000001")
		write(t, p, `{"digest":`)
		go func() {
			time.Sleep(bindingReadGrace / 2)
			write(t, p, `{"digest":"d","run_id":"`+idA+`","created_at":"x"}`)
		}()
		if got, err := b.Lookup("late-key-0000000001"); err != nil || got == nil || got.RunID != idA {
			t.Fatalf("Lookup = %+v %v", got, err)
		}
	})
}
