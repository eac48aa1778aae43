package mailbox

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	fm "github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakemailbox"
)

func TestDecodeEnvelope(t *testing.T) {
	raw := fm.Envelope("cmd_01HZX5Q3J9K2M4N6P8R0S2T4V6", "click", map[string]any{"node_id": "n_0123abcd"}, fm.SubA,
		map[string]any{"expires_at": "2030-01-02T03:04:05.123Z", "enqueued_at": "2030-01-02T03:04:00+01:00"})
	e, err := DecodeEnvelope([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if e.CommandID != "cmd_01HZX5Q3J9K2M4N6P8R0S2T4V6" || e.Tool != "click" || e.Sub != fm.SubA || e.ClientDisplay != "ChatGPT" ||
		!e.ExpiresAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 123e6, time.UTC)) || string(e.Args["node_id"]) != `"n_0123abcd"` {
		t.Fatalf("decoded %+v", e)
	}
	for name, extra := range map[string]map[string]any{
		"no command_id":     {"command_id": nil},
		"bad command_id":    {"command_id": "cmd 1"},
		"no args":           {"args": nil},
		"args not object":   {"args": []any{}},
		"no status":         {"status": nil},
		"bad status":        {"status": "queued"},
		"no client id":      {"client_id_sha256": nil},
		"upper-case sub":    {"oauth_sub_sha256": strings.ToUpper(fm.SubA)},
		"bad time":          {"expires_at": "2030-01-02 03:04:05Z"},
		"local time":        {"expires_at": "2030-01-02T03:04:05"},
		"pack not a pack":   {"pack_id": "job-1"},
		"result not object": {"result": "x"},
		"display empty":     {"client_display": ""},
		"tool not string":   {"tool": 3},
		"unknown field":     {"leaseSecret": fm.Lease},
	} {
		raw := fm.Envelope("c1", "observe", nil, fm.SubA, extra)
		if _, err := DecodeEnvelope([]byte(raw)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeEnvelope(f *testing.F) {
	f.Add([]byte(fm.Envelope("c1", "observe", nil, fm.SubA, nil)))
	f.Add([]byte(fm.Envelope("c2", "click", map[string]any{"node_id": "n_00000001"}, fm.SubB, map[string]any{"client_display": "Claude"})))
	f.Add([]byte(fm.Envelope("c3", "pause_for_input", map[string]any{"param": "pw", "secret": true}, fm.SubA, nil)))
	f.Add([]byte(`{"command_id":"x","command_id":"y"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := DecodeEnvelope(raw)
		if err != nil {
			if id, ok := isEnvelopeError(err); !ok || (id != "" && !commandIDRE().MatchString(id)) {
				t.Fatalf("error %v with id %q", err, id)
			}
			return
		}
		if len(raw) > MaxEnvelopeBytes || !commandIDRE().MatchString(e.CommandID) || !ValidPack(e.PackID) ||
			len(e.Sub) != 64 || !isLowerHex(e.Sub) || e.Args == nil || !commandStatuses[e.Status] {
			t.Fatalf("accepted %+v", e)
		}
		if _, _, ok := parseArgsSafe(e); !ok {
			return
		}
		// A decoded envelope re-encodes to an object that decodes the same.
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("accepted bytes that are not JSON: %v", err)
		}
	})
}

// parseArgsSafe runs parseArgs for known tools (it must not panic on any
// decoded envelope).
func parseArgsSafe(e Envelope) (string, args, bool) {
	if !mailboxTools[e.Tool] {
		return e.Tool, args{}, false
	}
	a, ok := parseArgs(e.Tool, e.Args)
	return e.Tool, a, ok
}
