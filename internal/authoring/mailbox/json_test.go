package mailbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// The body parser transport.go had before it moved onto pyjson
// (two encoding/json passes: a token walk for duplicates and depth, then a
// decode), kept here only as the differential's oracle.

// oldDecodeObject decodes one JSON object with no duplicate keys and nothing
// after it.
func oldDecodeObject(raw []byte) (map[string]json.RawMessage, error) {
	if err := oldCheckNoDuplicateKeys(raw); err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return obj, nil
}

// oldCheckNoDuplicateKeys walks raw and refuses an object with a repeated key at
// any depth: a parser differential on oauth_sub_sha256 or tool must not
// exist between the service and this client.
func oldCheckNoDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // next token in an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].key = true
				}
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return errors.New("duplicate key")
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) == 64 {
				return errors.New("nested too deeply")
			}
			stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, key: d == '{'})
			continue
		case ']':
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a key comes next.
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].key = true
		}
	}
}

// tightenedBody are pyjson's refusals of bodies the old parser accepted:
// text that is not Unicode, which encoding/json read as U+FFFD while the
// service (Python) holds something else.
var tightenedBody = map[string]bool{"invalid UTF-8": true, "lone surrogate escape": true}

func checkBodyDifferential(t *testing.T, b []byte) {
	t.Helper()
	old, errOld := oldDecodeObject(b)
	got, errNew := decodeObject(b)
	if errNew != nil {
		var se *pyjson.SyntaxError
		switch {
		case errors.Is(errNew, errNotObject):
			if errOld == nil {
				t.Fatalf("old parser accepted a non-object: %q", b)
			}
		case errors.As(errNew, &se):
			if errOld == nil && !tightenedBody[se.Msg] {
				t.Fatalf("refused (%v) what the old parser accepted: %q", errNew, b)
			}
			if errNew.Error() != fmt.Sprintf("%s at byte %d", se.Msg, se.Offset) {
				t.Fatalf("error text %q", errNew)
			}
		default:
			t.Fatalf("error type %T", errNew)
		}
		return
	}
	if errOld != nil {
		t.Fatalf("accepted what the old parser refused (%v): %q", errOld, b)
	}
	if len(got) != len(old) {
		t.Fatalf("%d members, old %d", len(got), len(old))
	}
	for k, v := range old {
		if g, ok := got[k]; !ok || !bytes.Equal(g, v) || cap(g) != len(g) {
			t.Fatalf("member %q: %q (cap %d), old %q", k, g, cap(g), v)
		}
	}
}

func bodySeeds() []string {
	env := fm.Envelope("cmd_01HZX5Q3J9K2M4N6P8R0S2T4V6", "click", map[string]any{"node_id": "n_0123abcd"}, fm.SubA, nil)
	return []string{
		env, fm.Command(env), `{"leaseSecret":"` + fm.Lease + `","lease_s":900}`, `{"halted":true}`, `{"head":{"halted":true}}`,
		`{}`, ` {"a":1} `, "{\"a\":1}\n", `[]`, `null`, `1`, ``, `{`, `{"a":1,}`, `{"a":1}x`, `{"a":1}{}`,
		`{"a":1,"a":2}`, `{"r":{"a":1,"a":2}}`, `{"r":[{"k":1,"k":2}]}`, `{"r":{"a":1,"\u0061":2}}`,
		`{"command":` + strings.Replace(env, `"tool":"click"`, `"tool":"click","tool":"halt"`, 1) + `}`,
		`{"a":"\ud800"}`, `{"a":"\udc00x"}`, `{"a":"\ud83d\ude00"}`, "{\"a\":\"\xff\"}", "{\"\xc3\":1}", "\xef\xbb\xbf{}",
		`{"d":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
		`{"d":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
		`{"d":` + strings.Repeat(`{"a":`, 63) + `1` + strings.Repeat("}", 63) + `}`,
		`{"n":1e999}`, `{"n":-0.0e-0}`, `{"n":01}`, `{"n":.5}`, "{\"c\":\"\t\"}", `{"e":"\q"}`,
	}
}

// TestBodyParserDifferential runs the one-pass parser against the old
// two-pass one over the fake mailbox's bodies and adversarial input.
func TestBodyParserDifferential(t *testing.T) {
	for _, s := range bodySeeds() {
		checkBodyDifferential(t, []byte(s))
	}
	// The rules the mailbox contract and the old parser share, pinned.
	for s, ok := range map[string]bool{
		`{"r":{"a":1,"a":2}}`: false, // a duplicate at any depth
		`{"d":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`: true,
		`{"d":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`: false, // 65 levels
		`{"a":1} `: true, `{"a":1}x`: false, `null`: false, "{\"a\":\"\xff\"}": false,
	} {
		if _, err := decodeObject([]byte(s)); (err == nil) != ok {
			t.Errorf("%.40q: %v", s, err)
		}
	}
}

func FuzzBodyParser(f *testing.F) {
	for _, s := range bodySeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkBodyDifferential(t, b) })
}
