package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fswatch"
)

// hugeAssetRoot writes a root whose second bundle lists a sparse 1 TiB
// asset: hashing it would take minutes, so only cancellation ends it early.
func hugeAssetRoot(t *testing.T) (root, huge string) {
	root = t.TempDir()
	defaultSynth().write(t, filepath.Join(root, "a"))
	s := defaultSynth()
	s.Files = map[string][]byte{"templates/huge.png": []byte("x")}
	s.write(t, filepath.Join(root, "b"))
	defaultSynth().write(t, filepath.Join(root, "c"))
	huge = filepath.Join(root, "b", "templates", "huge.png")
	if err := os.Truncate(huge, 1<<40); err != nil {
		t.Skip("no sparse 1 TiB file here:", err)
	}
	return root, huge
}

// TestDiscoverStopsOnCancel: with WithContext, a canceled context stops
// Discover inside a file being hashed (observed through inotify, no sleep)
// and before any further bundle; the error wraps context.Canceled and no
// partial result is returned.
func TestDiscoverStopsOnCancel(t *testing.T) {
	root, huge := hugeAssetRoot(t)
	w, ok, err := fswatch.Accessed(huge)
	if !ok {
		t.Skip("no inotify")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		bs  []*Bundle
		err error
	}
	done := make(chan result, 1)
	go func() {
		bs, err := Discover(root, WithContext(ctx), WithWorkers(1))
		done <- result{bs, err}
	}()
	if !w.Wait(time.Minute) {
		cancel()
		t.Fatal("the huge asset was never read")
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.bs != nil {
			t.Fatalf("got %v, %d bundles; want context.Canceled and none", r.err, len(r.bs))
		}
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("Discover ignored the canceled context")
	}

	// Already canceled: nothing is read at all.
	b, err := Load(filepath.Join(root, "a"), WithContext(ctx))
	if !errors.Is(err, context.Canceled) || b != nil {
		t.Fatalf("Load with a canceled context: %v %v", b, err)
	}
	var nilCtx context.Context // a nil context is the error under test
	if _, err := Discover(root, WithContext(nilCtx)); !errors.Is(err, ErrOption) {
		t.Fatalf("nil context: %v", err)
	}
}
