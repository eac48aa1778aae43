package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func seedFiles(f *testing.F, dir string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".json" {
			if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
				f.Add(b)
			}
		}
		return nil
	})
}

// FuzzCanonical: the canonical check never panics; whatever it accepts is
// a fixed point (parse → canonical + LF == input), and canonical output of
// any parsed value is itself accepted.
func FuzzCanonical(f *testing.F) {
	seedFiles(f, filepath.Join("..", "testdata", "ledger", "snapshot", "production-evidence"))
	for _, s := range []string{`{}` + "\n", `{"a":1}` + "\n", `{"a":1.0}` + "\n", `{"b":1,"a":2}` + "\n",
		`{"a":"\u00e9"}` + "\n", `{"a":"é\u2028<>&/"}` + "\n", `{"a":"\u001f"}` + "\n", `[-0]` + "\n", `{"a":1,"a":1}` + "\n", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := checkCanonicalLF(raw)
		if err == nil {
			c, err := canonicalLF(v)
			if err != nil || !bytes.Equal(c, raw) {
				t.Fatalf("accepted bytes are not a fixed point")
			}
		}
		if v != nil {
			if c, err := canonicalLF(v); err == nil {
				if err := CheckCanonical(c); err != nil {
					t.Fatalf("canonical output rejected: %v\n%q", err, c)
				}
			}
		}
	})
}

// FuzzParseReference: the reference parser never panics, and what it
// accepts round-trips through canonical JSON to the same reference.
func FuzzParseReference(f *testing.F) {
	seedFiles(f, filepath.Join("..", "testdata", "ledger", "extra"))
	f.Add([]byte(`{"schema_version":"openadapt.production-evidence-object-reference/v2"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := parseJSON(raw)
		if err != nil {
			return
		}
		probe := func(x any) {
			ref, err := ParseReference(x)
			if err != nil {
				return
			}
			c, err := canonical(x)
			if err != nil {
				t.Fatalf("accepted reference has no canonical form")
			}
			v2, _ := parseJSON(c)
			ref2, err := ParseReference(v2)
			if err != nil || ref2.RegistryEntrySHA256 != ref.RegistryEntrySHA256 || ref2.ObjectPath != ref.ObjectPath {
				t.Fatalf("reference does not round-trip")
			}
		}
		probe(v)
		// Ledgers hold references in "admissions".
		if m, ok := asObj(v); ok {
			if rows, ok := asList(m["admissions"]); ok {
				for _, r := range rows {
					probe(r)
				}
			}
		}
	})
}

// FuzzParseJSON compares the strict parser with encoding/json: whatever the
// strict parser accepts, encoding/json accepts with the same canonical form;
// the strict parser may additionally refuse duplicate keys, invalid UTF-8
// and lone surrogates, nothing else.
func FuzzParseJSON(f *testing.F) {
	seedFiles(f, filepath.Join("..", "testdata", "ledger", "extra"))
	for _, s := range []string{`{"a":[1,-0,1e5,"\ud83d\ude00"]}`, `{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `[]`, ` null `, `{"a":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ours, errOurs := parseJSON(raw)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var theirs any
		errTheirs := dec.Decode(&theirs)
		if errTheirs == nil {
			if _, err := dec.Token(); err != io.EOF {
				errTheirs = errors.New("trailing data")
			}
		}
		if errOurs == nil {
			if errTheirs != nil {
				t.Fatalf("strict parser accepted what encoding/json refuses: %v", errTheirs)
			}
			a, err1 := canonical(ours)
			b, err2 := canonical(theirs)
			if (err1 == nil) != (err2 == nil) || !bytes.Equal(a, b) {
				t.Fatalf("trees differ:\n%s\n%s", a, b)
			}
			return
		}
		if errTheirs == nil && utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`)) && !strings.Contains(errOurs.Error(), "duplicate key") &&
			!strings.Contains(errOurs.Error(), "nesting too deep") {
			t.Fatalf("strict parser refused valid json: %v", errOurs)
		}
	})
}
