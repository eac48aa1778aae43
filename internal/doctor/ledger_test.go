package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ledgerVectors = func() string {
	a, err := filepath.Abs("../../testdata/ledger")
	if err != nil {
		panic(err)
	}
	return a
}()

func TestLedgerCheck(t *testing.T) {
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	tampered := t.TempDir()
	if err := os.CopyFS(tampered, os.DirFS(filepath.Join(ledgerVectors, "snapshot"))); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(tampered, "evidence-registry.json")
	b, err := os.ReadFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Claim another registry revision: still JSON, no longer what was signed.
	tb := strings.Replace(string(b), `"revision": 3`, `"revision": 4`, 1)
	if tb == string(b) {
		t.Fatal("revision not found in the evidence registry")
	}
	if err := os.WriteFile(reg, []byte(tb), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		path       string
		now        time.Time
		wantStatus Status
		wantMsg    string
	}{
		{name: "embedded", now: at, wantStatus: Warn, wantMsg: "embedded snapshot of 2026-09-02 (89 days old): integrity incomplete; 2 of 7 release targets actively admitted; 1 of 7 workflow admissions active; this ledger admits no workflow bundle (6 unattributed workflow row(s) refuse every admission)"},
		{name: "embedded and old", now: at.AddDate(0, 6, 0), wantStatus: Warn, wantMsg: "embedded snapshot of 2026-09-02 (270 days old): integrity incomplete"},
		{name: "path", path: filepath.Join(ledgerVectors, "snapshot"), now: at, wantStatus: Warn, wantMsg: "--ledger: integrity incomplete; 2 of 7 release targets actively admitted; 1 of 7 workflow admissions active; this ledger admits no workflow bundle"},
		{name: "missing", path: filepath.Join(t.TempDir(), "nope.json"), now: at, wantStatus: Fail, wantMsg: "--ledger cannot be read as an admission ledger"},
		{name: "tampered", path: tampered, now: at, wantStatus: Fail, wantMsg: "--ledger: integrity failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := LedgerCheck(context.Background(), tt.path, tt.now)
			if c.ID != IDLedger || c.Status != tt.wantStatus || !strings.HasPrefix(c.Message, tt.wantMsg) {
				t.Errorf("got %s %q, want %s %q…", c.Status, c.Message, tt.wantStatus, tt.wantMsg)
			}
			if c.Status != OK && c.Fix == "" {
				t.Error("a problem without a fix")
			}
		})
	}
}
