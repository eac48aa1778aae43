package pyjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type inner struct {
	Status string `json:"status"`
	Steps  *int   `json:"steps,omitempty"`
}

type embedded struct {
	Owner string `json:"owner"`
}

type record struct {
	embedded
	RunID    string            `json:"run_id"`
	Outcome  *inner            `json:"outcome"`
	List     []inner           `json:"list"`
	ByName   map[string]inner  `json:"by_name"`
	Raw      json.RawMessage   `json:"raw"`
	Any      any               `json:"any"`
	Untagged string            //
	Skipped  string            `json:"-"`
	Labels   map[string]string `json:"labels"`
}

// TestUnmarshalLookalikeKeys: a key that differs from a known field only
// in case (or by a Unicode case fold: the Kelvin sign, the long s) is
// refused at any depth, open format or closed, so encoding/json's
// case-insensitive match can never give one document two meanings:
// {"status":"halt","Status":"success"} used to decode as success.
func TestUnmarshalLookalikeKeys(t *testing.T) {
	for _, doc := range []string{
		`{"run_id":"a","outcome":{"status":"halt","Status":"success"}}`,
		`{"run_id":"a","outcome":{"STATUS":"success"}}`,
		`{"Run_ID":"b","run_id":"a"}`,
		`{"run_id":"a","outcome":{"ſtatus":"success"}}`,
		`{"run_id":"a","outcome":{"status":"halt","\u0053tatus":"success"}}`,
		`{"run_id":"a","list":[{"status":"ok"},{"statuS":"x"}]}`,
		`{"run_id":"a","by_name":{"k":{"Status":"x"}}}`,
		`{"OWNER":"x"}`,
		`{"untagged":"x"}`,
		`{"run_id":"a","outcome":{"STEPS":3}}`,
	} {
		for _, closed := range []bool{false, true} {
			var r record
			err := Unmarshal([]byte(doc), Options{Closed: closed}, &r)
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(se.Msg, "only in case") {
				t.Errorf("%s (closed %v): %v, want a lookalike-key error", doc, closed, err)
			}
			if err != nil && strings.Contains(err.Error(), "tatus") {
				t.Errorf("error echoes the key: %v", err)
			}
		}
	}
}

// TestUnmarshalClosed: where the format is closed an unknown key is
// refused; where it is open it is ignored. Keys inside maps, RawMessage
// and interface values are data, not fields.
func TestUnmarshalClosed(t *testing.T) {
	ok := `{"owner":"o","run_id":"a","outcome":{"status":"halt","steps":2},"list":[{"status":"x"}],` +
		`"by_name":{"Status":{"status":"y"}},"raw":{"Status":1,"status":2},"any":{"A":1,"a":2},"Untagged":"u","labels":{"RUN_ID":"v"}}`
	for _, closed := range []bool{false, true} {
		var r record
		if err := Unmarshal([]byte(ok), Options{Closed: closed}, &r); err != nil {
			t.Fatalf("closed %v: %v", closed, err)
		}
		if r.Owner != "o" || r.Outcome.Status != "halt" || *r.Outcome.Steps != 2 || r.ByName["Status"].Status != "y" || r.Untagged != "u" || r.Labels["RUN_ID"] != "v" {
			t.Fatalf("decoded %+v", r)
		}
	}
	for _, doc := range []string{
		`{"run_id":"a","extra":1}`,
		`{"run_id":"a","outcome":{"status":"x","why":"y"}}`,
		`{"-":"x"}`,
	} {
		var r record
		err := Unmarshal([]byte(doc), Options{Closed: true}, &r)
		var se *SyntaxError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "unknown") {
			t.Errorf("%s: %v, want an unknown-key error", doc, err)
		}
		if err := Unmarshal([]byte(doc), Options{}, &r); err != nil {
			t.Errorf("%s open: %v", doc, err)
		}
	}
	// The strict core still applies: duplicate keys, invalid UTF-8.
	var r record
	if err := Unmarshal([]byte(`{"run_id":"a","run_id":"b"}`), Options{}, &r); err == nil {
		t.Error("duplicate key decoded")
	}
}
