package flowhelper_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

func TestAuthorityDB(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"home default", []string{"HOME=/h"}, "/h/.openadapt/durable-authority/authority.sqlite3"},
		{"absolute", []string{"HOME=/h", "OPENADAPT_DURABLE_AUTHORITY_DB=/db/a.sqlite3"}, "/db/a.sqlite3"},
		{"relative to the working dir, lexical", []string{"HOME=/h", "OPENADAPT_DURABLE_AUTHORITY_DB=x/../db.sqlite3"}, "/wd/db.sqlite3"},
		{"tilde", []string{"HOME=/h", "OPENADAPT_DURABLE_AUTHORITY_DB=~/db.sqlite3"}, "/h/db.sqlite3"},
		{"last value wins", []string{"HOME=/a", "HOME=/b"}, "/b/.openadapt/durable-authority/authority.sqlite3"},
		{"empty variable is the default", []string{"HOME=/h", "OPENADAPT_DURABLE_AUTHORITY_DB="}, "/h/.openadapt/durable-authority/authority.sqlite3"},
	} {
		if got := flowhelper.AuthorityDB(tc.env, "/wd"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := flowhelper.AuthorityDB([]string{"HOME=/h", "OPENADAPT_DURABLE_AUTHORITY_DB=rel.sqlite3"}, ""); got != "" {
		t.Errorf("relative without a working dir: %q", got)
	}
	env := flowhelper.WithAuthorityDB([]string{"A=1", "OPENADAPT_DURABLE_AUTHORITY_DB=/old"}, "/new")
	if !slices.Equal(env, []string{"A=1", "OPENADAPT_DURABLE_AUTHORITY_DB=/new"}) {
		t.Errorf("WithAuthorityDB %q", env)
	}
}

func TestAuthorityRecord(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if got := flowhelper.ReadAuthorityRecord(ctx, dir); got != "" {
		t.Fatalf("no record: %q", got)
	}
	if err := flowhelper.WriteAuthorityRecord(dir, "/db/authority.sqlite3"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, flowhelper.AuthorityFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record mode %v %v", fi, err)
	}
	if got := flowhelper.ReadAuthorityRecord(ctx, dir); got != "/db/authority.sqlite3" {
		t.Fatalf("read %q", got)
	}
	// A relative path, garbage or a link is no record.
	for _, body := range []string{`{"authority_db":"rel.sqlite3"}`, `not json`} {
		os.WriteFile(filepath.Join(dir, flowhelper.AuthorityFile), []byte(body), 0o600)
		if got := flowhelper.ReadAuthorityRecord(ctx, dir); got != "" {
			t.Errorf("%s: %q", body, got)
		}
	}
	other := t.TempDir()
	flowhelper.WriteAuthorityRecord(other, "/elsewhere.sqlite3")
	os.Remove(filepath.Join(dir, flowhelper.AuthorityFile))
	os.Symlink(filepath.Join(other, flowhelper.AuthorityFile), filepath.Join(dir, flowhelper.AuthorityFile))
	if got := flowhelper.ReadAuthorityRecord(ctx, dir); got != "" {
		t.Errorf("through a link: %q", got)
	}
}

func TestJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, ok := flowhelper.LastJournaled(ctx, dir, "k"); ok {
		t.Fatal("no journal")
	}
	cap := "sha256:" + fmt64("a")
	key := "key-0000000000000001"
	rd := flowhelper.RequestDigest("reject", cap, key)
	os.WriteFile(filepath.Join(dir, "attended_decisions.json"), []byte(`{"decisions":[
 {"idempotency_key":"`+key+`","request_digest":"x","capability_digest":"`+cap+`","action":"reject","status":"delivery_started"},
 {"idempotency_key":"`+key+`","request_digest":"`+rd+`","capability_digest":"`+cap+`","action":"reject","status":"rejected"},
 {"idempotency_key":"other-key-0000000001","request_digest":"y","capability_digest":"`+cap+`","action":"teach","status":"needs_demonstration"}]}`), 0o600)
	j, ok := flowhelper.LastJournaled(ctx, dir, key)
	if !ok || j.Status != "rejected" || !j.Replayable("reject", cap, key) {
		t.Fatalf("%+v %v", j, ok)
	}
	if j.Replayable("escalate", cap, key) || j.Replayable("reject", "sha256:"+fmt64("b"), key) || j.Replayable("reject", cap, "key-0000000000000002") {
		t.Fatal("replayable for another request")
	}
	// Flow's request_digest of this request (canonical JSON, sorted keys).
	if rd != flowhelper.RequestDigest("reject", cap, key) || len(rd) != 71 {
		t.Fatalf("digest %q", rd)
	}
}

func fmt64(c string) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c[0]
	}
	return string(b)
}
