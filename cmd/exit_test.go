package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"plain error is a failed check", errors.New("boom"), 1},
		{"check failed", errCheckFailed, 1},
		{"usage", usageErrorf("bad flag"), 2},
		{"wrapped usage", fmt.Errorf("ctx: %w", usageErrorf("bad")), 2},
		{"usage with hint", withHint(usageErrorf("bad"), "try this"), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.want {
				t.Fatalf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestPrintError(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printError(&b, withHint(errors.New("first\nsecond"), "do this"))
	want := "openadapt-agent: error: first second\nopenadapt-agent: hint: do this\n"
	if b.String() != want {
		t.Fatalf("printError wrote %q, want %q", b.String(), want)
	}
	b.Reset()
	printError(&b, errCheckFailed)
	if b.Len() != 0 {
		t.Fatalf("errCheckFailed printed %q, want nothing", b.String())
	}
}

func TestRunUsageExit(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"version", "--bogus"}, nil, &out, &errb); code != 2 {
		t.Fatalf("exit = %d, want 2", code)
	}
	if out.Len() != 0 {
		t.Fatalf("stdout = %q, want empty", out.String())
	}
}
