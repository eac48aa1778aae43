package labels

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

const (
	id1 = "workflow_0123456789abcdef01234567"
	id2 = "workflow_0123456789abcdef01234567_2"
)

func doc(workflows string) string {
	return `{"mediaType":"` + MediaType + `","workflows":` + workflows + `}`
}

func TestParseOK(t *testing.T) {
	l, err := Parse([]byte(doc(`{"` + id1 + `":{"label":"Triage a referral","description":"Files one inbound referral in MockMed. – ünïcödé, 漢字, TAB-free"},"` + id2 + `":{"label":"","description":""},"local_quickstart":{}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Get(id1); got.Label != "Triage a referral" || !strings.HasPrefix(got.Description, "Files one") {
		t.Fatalf("%+v", got)
	}
	if got := l.Get(id2); got != (Entry{}) {
		t.Fatalf("empty entry %+v", got)
	}
	if len(l.IDs) != 3 || l.IDs[0] != id1 || l.IDs[2] != "local_quickstart" {
		t.Fatalf("ids %v", l.IDs)
	}
	if n := l.Unknown(func(id string) bool { return id == id1 }); n != 2 {
		t.Fatalf("unknown %d", n)
	}
	if !l.Get(id1).Match("referral") || !l.Get(id1).Match("mockmed") || l.Get(id1).Match("nothing") {
		t.Fatal("match")
	}
	// Exactly at the caps.
	full := doc(`{"` + id1 + `":{"label":"` + strings.Repeat("é", MaxLabel) + `","description":"` + strings.Repeat("漢", MaxDescription) + `"}}`)
	if _, err := Parse([]byte(full)); err != nil {
		t.Fatalf("at the caps: %v", err)
	}
	if l, err := Parse([]byte(doc(`{}`))); err != nil || len(l.IDs) != 0 {
		t.Fatalf("empty workflows: %v", err)
	}
}

// TestParseHostile: every violation is refused with the JSON pointer of the
// bad entry, and the error never carries the file's text.
func TestParseHostile(t *testing.T) {
	const secret = "Jane Roe MRN-9911"
	entry := func(label string) string { return doc(`{"` + id1 + `":{"label":"` + label + `"}}`) }
	for _, tc := range []struct {
		name, in, ptr string
	}{
		{"not JSON", secret, ""},
		{"BOM", "\ufeff" + doc(`{}`), ""},
		{"invalid UTF-8", doc(`{"` + id1 + `":{"label":"` + secret + "\xff" + `"}}`), ""},
		{"lone surrogate", entry(`\ud800` + secret), ""},
		{"array", `[` + `"` + secret + `"]`, ""},
		{"duplicate top-level key", `{"mediaType":"` + MediaType + `","mediaType":"` + MediaType + `","workflows":{}}`, ""},
		{"duplicate id", doc(`{"` + id1 + `":{},"` + id1 + `":{"label":"` + secret + `"}}`), ""},
		{"duplicate field", doc(`{"` + id1 + `":{"label":"a","label":"` + secret + `"}}`), ""},
		{"unknown top-level key", `{"mediaType":"` + MediaType + `","workflows":{},"` + secret + `":1}`, ""},
		{"missing mediaType", `{"workflows":{}}`, "/mediaType"},
		{"wrong mediaType", `{"mediaType":"application/json` + secret + `","workflows":{}}`, "/mediaType"},
		{"mediaType version 2", `{"mediaType":"application/vnd.openadapt.agent.labels+json;version=2","workflows":{}}`, "/mediaType"},
		{"mediaType not a string", `{"mediaType":1,"workflows":{}}`, "/mediaType"},
		{"missing workflows", `{"mediaType":"` + MediaType + `"}`, "/workflows"},
		{"workflows array", `{"mediaType":"` + MediaType + `","workflows":[]}`, "/workflows"},
		{"bad id", doc(`{"` + secret + `":{}}`), "/workflows"},
		{"id with a long suffix", doc(`{"` + id1 + `_1234567890":{}}`), "/workflows"},
		{"entry not an object", doc(`{"` + id1 + `":"` + secret + `"}`), "/workflows/" + id1},
		{"unknown entry key", doc(`{"` + id1 + `":{"name":"` + secret + `"}}`), "/workflows/" + id1},
		{"label not a string", doc(`{"` + id1 + `":{"label":["` + secret + `"]}}`), "/workflows/" + id1 + "/label"},
		{"label too long", entry(secret + strings.Repeat("x", MaxLabel)), "/workflows/" + id1 + "/label"},
		{"description too long", doc(`{"` + id1 + `":{"description":"` + secret + strings.Repeat("é", MaxDescription) + `"}}`), "/workflows/" + id1 + "/description"},
		{"NUL", entry(secret + `\u0000`), "/workflows/" + id1 + "/label"},
		{"newline", entry(secret + `\n`), "/workflows/" + id1 + "/label"},
		{"tab", entry(secret + `\t`), "/workflows/" + id1 + "/label"},
		{"DEL", entry(secret + "\x7f"), "/workflows/" + id1 + "/label"},
		{"C1", entry(secret + "\u0085"), "/workflows/" + id1 + "/label"},
		{"line separator", entry(secret + "\u2028"), "/workflows/" + id1 + "/label"},
		{"paragraph separator", entry(secret + `\u2029`), "/workflows/" + id1 + "/label"},
		{"RLO", entry(secret + "\u202e"), "/workflows/" + id1 + "/label"},
		{"LRE", entry("\u202a" + secret), "/workflows/" + id1 + "/label"},
		{"RLI", entry(secret + "\u2067"), "/workflows/" + id1 + "/label"},
		{"PDI", entry(secret + `\u2069`), "/workflows/" + id1 + "/label"},
		{"float", doc(`{"` + id1 + `":{"label":1.5}}`), "/workflows/" + id1 + "/label"},
	} {
		_, err := Parse([]byte(tc.in))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want a format error", tc.name, err)
			continue
		}
		if e.Pointer != tc.ptr {
			t.Errorf("%s: pointer %q, want %q (%v)", tc.name, e.Pointer, tc.ptr, err)
		}
		for _, tok := range []string{"Jane", "MRN", "9911", "\u202e", "\x7f"} {
			if strings.Contains(err.Error(), tok) {
				t.Errorf("%s: error echoes the file: %q", tc.name, err)
			}
		}
	}
}

// TestReadHostileFiles: a FIFO is refused without blocking, an oversize
// file before it is read, a directory as not regular.
func TestReadHostileFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(doc(`{}`)+strings.Repeat(" ", int(fsutil.Labels.Max))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(ctx, big); !errors.Is(err, fsutil.ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	if _, err := Read(ctx, dir); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Errorf("directory: %v", err)
	}
	if _, err := Read(ctx, filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte(doc(`{"`+id1+`":{"label":"x"}}`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, err := Read(ctx, ok); err != nil || l.Get(id1).Label != "x" {
		t.Errorf("ok: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip("mkfifo:", err)
	}
	// Nobody ever opens the other end: a blocking open would hang here.
	if _, err := Read(ctx, fifo); !errors.Is(err, fsutil.ErrNotRegular) {
		t.Errorf("fifo: %v", err)
	}
}
