package bundle

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStepIDs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		workflow string
		want     []string
		err      error
	}{
		{"steps", `{"steps":[{"id":"b"},{"id":"a"},{"intent":"no id"}]}`, []string{"", "a", "b"}, nil},
		{"program and subflows", `{"steps":[],"program":{"states":{"start":{"step":{"id":"s1"}},"decide":{"decision":{}}}},
			"subflows":{"sub":{"states":{"inner":{"step":{"id":"s2"}}}}}}`, []string{"decide", "inner", "s1", "s2", "start"}, nil},
		{"duplicates once", `{"steps":[{"id":"x"}],"program":{"states":{"x":{"step":{"id":"x"}}}}}`, []string{"x"}, nil},
		{"null sections", `{"steps":null,"program":null,"subflows":null}`, nil, nil},
		{"numeric id", `{"steps":[{"id":7}]}`, nil, ErrInvalidJSON},
		{"duplicate key", `{"steps":[{"id":"a","id":"b"}]}`, nil, ErrInvalidJSON},
		{"not an object", `[]`, nil, ErrInvalidJSON},
		{"trailing data", `{} {}`, nil, ErrInvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(tc.workflow), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := StepIDs(context.Background(), dir)
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestStepIDsVector(t *testing.T) {
	t.Parallel()
	got, err := StepIDs(context.Background(), filepath.Join(vectorsDir, "attended/bundles/attended-sample"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"human", "next"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestStepIDsRefusals(t *testing.T) {
	t.Parallel()
	t.Run("sealed bundle", func(t *testing.T) {
		t.Parallel()
		if _, err := StepIDs(context.Background(), filepath.Join(vectorsDir, "sealed/mockmed-triage-v3")); !errors.Is(err, ErrNotABundle) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "workflow.json")
		os.WriteFile(target, []byte(`{"steps":[{"id":"secret-step"}]}`), 0o600)
		if err := os.Symlink(target, filepath.Join(dir, "workflow.json")); err != nil {
			t.Skip(err)
		}
		if _, err := StepIDs(context.Background(), dir); !errors.Is(err, ErrUnsafePath) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := mkfifo(filepath.Join(dir, "workflow.json")); err != nil {
			t.Skip(err)
		}
		if _, err := StepIDs(context.Background(), dir); !errors.Is(err, ErrNotABundle) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("error names no path", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "private-name")
		_, err := StepIDs(context.Background(), dir)
		if err == nil || filepath.IsAbs(err.Error()) || strings.Contains(err.Error(), "private-name") {
			t.Fatalf("err = %v", err)
		}
	})
}
