package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// oldParseObject is the lock-file parser lock.go had before it moved
// it onto pyjson (a json.Decoder token walk; a repeated top-level key kept
// its first position and its last value, as JSON.parse does, and nested
// values were kept raw, duplicates and all). Kept here only as the
// differential's oracle.
func oldParseObject(data []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := newObject()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		o.set(k, raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	return o, nil
}

// hasDuplicate reports whether b (which encoding/json accepts) repeats a
// key in some object, comparing decoded keys (a recursive walk of its own,
// independent of both parsers).
func hasDuplicate(b []byte) bool {
	dup, _ := dupIn(json.NewDecoder(bytes.NewReader(b)))
	return dup
}

func dupIn(dec *json.Decoder) (bool, error) {
	tok, err := dec.Token()
	if err != nil {
		return false, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return false, nil
	}
	seen := map[string]bool{}
	for dec.More() {
		if d == '{' {
			kt, err := dec.Token()
			if err != nil {
				return false, err
			}
			k, _ := kt.(string)
			if seen[k] {
				return true, nil
			}
			seen[k] = true
		}
		if dup, err := dupIn(dec); dup || err != nil {
			return dup, err
		}
	}
	_, err = dec.Token()
	return false, err
}

// checkLockDifferential: what the new parser accepts the old one accepted,
// with the same keys in the same order and byte-identical values (so the
// rewritten file is byte-identical too); what only the old one accepted
// has a repeated key, invalid UTF-8, a lone surrogate escape or nesting
// beyond pyjson's bound: the documented fail-closed choices.
func checkLockDifferential(t *testing.T, b []byte) {
	t.Helper()
	old, errOld := oldParseObject(b)
	got, errNew := parseObject(b)
	if errNew != nil {
		if errOld != nil {
			return
		}
		var se *pyjson.SyntaxError
		if !errors.As(errNew, &se) {
			t.Fatalf("old parser accepted what the new one calls %v: %q", errNew, b)
		}
		switch se.Msg {
		case "duplicate key":
			if !hasDuplicate(b) {
				t.Fatalf("duplicate key reported where there is none: %q", b)
			}
		case "invalid UTF-8", "lone surrogate escape", "nesting too deep":
		default:
			t.Fatalf("refused (%v) what the old parser accepted: %q", errNew, b)
		}
		return
	}
	if errOld != nil {
		t.Fatalf("accepted what the old parser refused (%v): %q", errOld, b)
	}
	if !slices.Equal(got.keys, old.keys) || len(got.vals) != len(old.vals) {
		t.Fatalf("keys %q, old %q", got.keys, old.keys)
	}
	for _, k := range old.keys {
		if !bytes.Equal(got.vals[k], old.vals[k]) {
			t.Fatalf("value of %q: %q, old %q", k, got.vals[k], old.vals[k])
		}
	}
	gm, _ := got.MarshalJSON()
	om, _ := old.MarshalJSON()
	if !bytes.Equal(gm, om) {
		t.Fatalf("re-encoded %q, old %q", gm, om)
	}
}

// lockSeeds are lock files the skills CLI writes (JSON.stringify, 2-space
// indent), ours, and adversarial ones.
var lockSeeds = []string{
	"{\n  \"version\": 3,\n  \"skills\": {\n    \"other\": {\n      \"source\": \"vercel-labs/agent-skills\",\n      \"sourceType\": \"github\",\n      \"sourceUrl\": \"https://github.com/vercel-labs/agent-skills.git\",\n      \"skillPath\": \"skills/x/SKILL.md\",\n      \"skillFolderHash\": \"0123\",\n      \"installedAt\": \"2026-11-30T09:00:00.000Z\",\n      \"updatedAt\": \"2026-11-30T09:00:00.000Z\"\n    }\n  },\n  \"dismissed\": {\n    \"findSkillsPrompt\": true\n  },\n  \"lastSelectedAgents\": [\n    \"claude-code\"\n  ]\n}\n",
	`{"version":1,"skills":{"a":{"source":"./x","sourceType":"local","computedHash":"ff"}}}`,
	`{"version":3,"skills":{"other":{"source":"vercel-labs/agent-skills","sourceType":"github","extra":[1,2]}},"dismissed":{"x":true}}`,
	`{"z":1,"a":{"é":"\u00e9","<":"\u003c","n":1.50e+3,"big":123456789012345678901234567890}}`,
	`{}`, ` {} `, `{"a":1}x`, `{"a":1} {}`, `[]`, `null`, ``, `{"a":1,}`,
	`{"version":3,"version":1}`, `{"skills":{"a":{},"a":{"x":1}}}`, `{"skills":{"a":{"k":1,"k":2}}}`, `{"a":1,"\u0061":2}`,
	`{"a":"\ud800"}`, `{"\udc00":1}`, `{"a":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}", "\xef\xbb\xbf{}",
	`{"d":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"n":1e999}`, `{"n":01}`,
}

func TestLockParserDifferential(t *testing.T) {
	for _, s := range lockSeeds {
		checkLockDifferential(t, []byte(s))
	}
}

func FuzzLockParser(f *testing.F) {
	for _, s := range lockSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkLockDifferential(t, b) })
}

// TestLockRoundTripUnchanged: updating our entry rewrites every other key
// and value with the bytes the CLI's file had (escapes, number spellings,
// order), re-indented.
func TestLockRoundTripUnchanged(t *testing.T) {
	e := newInstallEnv(t)
	lockFile := filepath.Join(e.proj, "skills-lock.json")
	foreign := `{"version":1,"skills":{"zz":{"source":"\u00e9\/x","n":1.50E+3,"big":123456789012345678901234567890,"deep":[{"a":[]}]}},"extra":"\ud83d\ude00"}`
	os.WriteFile(lockFile, []byte(foreign), 0o644)
	if _, err := Install(e.opts(emitted(t), "codex")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(lockFile)
	for _, want := range []string{`"source": "\u00e9\/x"`, `"n": 1.50E+3`, `"big": 123456789012345678901234567890`, `"extra": "\ud83d\ude00"`,
		`"deep": [`, `"a": []`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("rewritten lock lost %s:\n%s", want, data)
		}
	}
	if i, j := strings.Index(string(data), `"mockmed-triage"`), strings.Index(string(data), `"zz"`); i < 0 || j < 0 || i > j {
		t.Errorf("project entries not sorted by name:\n%s", data)
	}
}
