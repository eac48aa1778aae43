package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestOneShotGC: no collection below oneShotHeap, and the first collection
// restores the settings the process had. Not parallel: it changes the
// process's collector.
func TestOneShotGC(t *testing.T) {
	p0, l0 := gcSettings()
	restored := make(chan struct{})
	testOnlyOneShotRestored = func() { close(restored) }
	defer func() { testOnlyOneShotRestored = nil }()

	tuneOneShotGC(func(string) string { return "" })
	if p, l := gcSettings(); p != -1 || l != oneShotHeap {
		t.Fatalf("after tuning: GC percent %d, limit %d; want -1, %d", p, l, oneShotHeap)
	}
	runtime.GC()
	select {
	case <-restored:
	case <-time.After(30 * time.Second): // a deadline, not a wait: the cleanup runs right after the cycle
		t.Fatal("the first collection did not restore the collector's settings")
	}
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("after the first collection: GC percent %d, limit %d; want %d, %d", p, l, p0, l0)
	}
}

// TestOneShotGCRespects: GOGC or GOMEMLIMIT in the environment, or a command
// that does not own the process (Run, as in-process tests call it), leave
// the collector alone.
func TestOneShotGCRespects(t *testing.T) {
	p0, l0 := gcSettings()
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		tuneOneShotGC(func(k string) string {
			if k == env {
				return "200"
			}
			return ""
		})
		if p, l := gcSettings(); p != p0 || l != l0 {
			t.Fatalf("with %s set: GC percent %d, limit %d; want %d, %d", env, p, l, p0, l0)
		}
	}
	(&IO{}).oneShotGC()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("under Run: GC percent %d, limit %d; want %d, %d", p, l, p0, l0)
	}
}

// TestLedgerCommandsTuneGC: `ledger verify` and `ledger admission` tune the
// collector when they own the process, and no other command does (serve
// runs for hours and keeps the default collector): the calls are found in
// the source.
func TestLedgerCommandsTuneGC(t *testing.T) {
	for _, args := range [][]string{
		{"ledger", "verify", "--at", "2026-11-30T00:00:00Z"},
		{"ledger", "admission", "--bundle-sha256", "sha256:5fc9", "--bundle-version", "0.0.0-synthetic"},
	} {
		tuned := 0
		restored := make(chan struct{})
		testOnlyOneShotTuned = func() { tuned++ }
		testOnlyOneShotRestored = func() { close(restored) }
		var out, errb bytes.Buffer
		run(context.Background(), args, &IO{In: strings.NewReader(""), Out: &out, Err: &errb, process: true})
		testOnlyOneShotTuned, testOnlyOneShotRestored = nil, nil
		if tuned != 1 {
			t.Errorf("%v: tuned the collector %d times, want 1", args, tuned)
		}
		runtime.GC()
		select {
		case <-restored:
		case <-time.After(30 * time.Second): // a deadline, not a wait
			t.Fatalf("%v: the first collection did not restore the collector's settings", args)
		}
	}

	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var callers []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(src, []byte(".oneShotGC()")) {
			callers = append(callers, f)
		}
	}
	if want := []string{"ledger_admission.go", "ledger_verify.go"}; !slices.Equal(callers, want) {
		t.Errorf("oneShotGC is called from %v, want only %v", callers, want)
	}
}
