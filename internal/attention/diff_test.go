package attention

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// The projector's reads and the capability canonical form moved from
// raw-member helpers (legacy_test.go) onto pyjson handles.
// These tests hold the new code to real Flow's digests and to the old
// answers.

const flowCap = "testdata/flowcap"

type flowCapExpected struct {
	Cases []struct {
		File, Digest, Signature string
	}
	NormalizedByFlow []struct {
		File               string
		FlowDigest         string `json:"flow_digest"`
		FlowSignatureValid bool   `json:"flow_signature_valid"`
	} `json:"normalized_by_flow"`
}

func loadFlowCap(t *testing.T) flowCapExpected {
	t.Helper()
	var exp flowCapExpected
	if err := json.Unmarshal(mustRead(t, filepath.Join(flowCap, "expected.json")), &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Cases) != 15 || len(exp.NormalizedByFlow) != 4 {
		t.Fatalf("%d cases, %d normalized", len(exp.Cases), len(exp.NormalizedByFlow))
	}
	return exp
}

// capDir makes a run directory holding file as attended_capability.json and
// the vectors' key.
func capDir(t *testing.T, data []byte) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "attended_capability.json"), string(data), 0o600)
	write(t, filepath.Join(dir, ".attended_capability.key"), string(mustRead(t, filepath.Join(flowCap, "capability.key"))), 0o600)
	return dir
}

// TestCapabilityFlowVectors: the digest and signature of capabilities real
// Flow wrote and signed, with adversarial strings and floats in every
// field, equal Flow's; the old raw-member form agrees on every one.
func TestCapabilityFlowVectors(t *testing.T) {
	exp := loadFlowCap(t)
	for _, c := range exp.Cases {
		data := mustRead(t, filepath.Join(flowCap, c.File))
		cp, err := loadCapability(capDir(t, data))
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		if cp.digest != c.Digest || !cp.valid {
			t.Errorf("%s: digest %s valid %v, Flow's %s", c.File, cp.digest, cp.valid, c.Digest)
		}
		if summaryOf(cp) == nil {
			t.Errorf("%s: no summary", c.File)
		}
		sig := cp.doc.Str(cp.doc.Get(cp.doc.Root(), "signature"))
		if sig != c.Signature {
			t.Errorf("%s: signature %s, Flow's %s", c.File, sig, c.Signature)
		}
		diffCanonical(t, data)
	}
}

// TestCapabilityNormalizedByFlow: files Flow's model normalizes (it never
// writes them) keep Flow's original signature valid for Flow, but the
// agent digests the file as it is: the digests differ,
// the signature is refused and no capability is offered (fail closed).
func TestCapabilityNormalizedByFlow(t *testing.T) {
	exp := loadFlowCap(t)
	for _, c := range exp.NormalizedByFlow {
		data := mustRead(t, filepath.Join(flowCap, c.File))
		dir := capDir(t, data)
		cp, err := loadCapability(dir)
		if err != nil {
			t.Fatalf("%s: %v", c.File, err)
		}
		if !c.FlowSignatureValid || cp.digest == c.FlowDigest || cp.valid {
			t.Errorf("%s: digest %s valid %v (Flow: %s, %v)", c.File, cp.digest, cp.valid, c.FlowDigest, c.FlowSignatureValid)
		}
		if capabilitySummary(dir) != nil {
			t.Errorf("%s: a capability offered", c.File)
		}
		diffCanonical(t, data)
	}
}

// diffCanonical fails t when canonicalUnsigned and the old json.Marshal
// form disagree on data. The one intended difference: a float literal that
// overflows a double is refused by the new parse wherever it is, while the
// old form refused it only in a member it kept (Flow's model refuses it in
// every field).
func diffCanonical(t *testing.T, data []byte) {
	t.Helper()
	var newOut []byte
	var newErr, oldErr error
	var parseErr error
	d := new(pyjson.Doc)
	if parseErr = d.Parse(data, capabilityJSON); parseErr == nil && d.Kind(d.Root()) == pyjson.Object {
		newOut, newErr = canonicalUnsigned(d)
	} else {
		newErr = errNotObject
	}
	var oldOut []byte
	if obj, ok := oldParseObject(data); ok {
		oldOut, oldErr = oldCanonicalUnsigned(obj)
	} else {
		oldErr = errNotObject
	}
	switch {
	case newErr == nil && oldErr == nil:
		if !bytes.Equal(newOut, oldOut) {
			t.Fatalf("canonical differs:\nnew %q\nold %q\nin  %.400q", newOut, oldOut, data)
		}
	case newErr != nil && oldErr != nil:
	case newErr != nil && parseErr != nil && pyjson.Valid(data, pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits, Floats: pyjson.FloatRefuse}):
		// The overflowing float literal in an omitted member.
	default:
		t.Fatalf("new err %v, old err %v\nin %.400q", newErr, oldErr, data)
	}
}

// adversarialCapabilities are capability-shaped objects with every string
// and number form the canonical writer must get right.
var adversarialCapabilities = []string{
	`{"schema_version":3,"a":"<>&\u2028\u2029</script>","b":"\u003c\u003e\u0026\u2028","signature":"x"}`,
	"{\"schema_version\":3,\"a\":\"<>& \u2028 \u2029 é 日本 😀 \u007f\",\"signature\":\"x\"}",
	`{"schema_version":3,"d":"\"\\\/\b\f\n\r\t\u0000\u001f\u007f\u00e9\ud83d\ude00","signature":"x"}`,
	`{"schema_version":3,"e":{"z":1,"a":[1.0,1e2,1E2,-0,-0.0,0.1,1e-7,1e16,1e22,123456789012345678901234567890,5e-324,1.7976931348623157e308,0.30000000000000004,100.000]},"signature":"x"}`,
	`{"schema_version":3,"n":{"b":{"c":{"d":[{"y":null,"x":true},false,[],{}]}}},"é":1,"e":2,"z":3,"Z":4,"😀":5,"\uffff":6}`,
	` { "schema_version" : 2 , "event_sequence" : 7 , "source_identity" : {"status":"verified"} , "source_identity_required" : true , "signature" : "s" } `,
	`{"schema_version":1,"event_sequence":7,"source_identity":{"status":"verified"},"source_identity_required":true,"signature":"s"}`,
	`{"schema_version":2.5,"event_sequence":7,"source_identity":null,"source_identity_required":false}`,
	`{"schema_version":1e0,"event_sequence":1,"source_identity":null}`,
	`{"schema_version":3.0,"event_sequence":1,"source_identity":null}`,
	`{"schema_version":-1,"event_sequence":1}`,
	`{"schema_version":null,"event_sequence":1,"source_identity":1}`,
	`{"schema_version":"3","event_sequence":1}`,
	`{"schema_version":true}`,
	`{"schema_version":[3]}`,
	`{"schema_version":{}}`,
	`{"event_sequence":1}`,
	`{"schema_version":1e400}`,
	`{"schema_version":3,"x":1e400}`,
	`{"schema_version":1,"event_sequence":1e400}`,
	`{"schema_version":3,"signature":-1e400}`,
	`{"schema_version":1` + strings.Repeat("0", 400) + `}`,
	`{"schema_version":3,"x":1` + strings.Repeat("0", 4300) + `}`,
	`{"schema_version":3,"x":1` + strings.Repeat("0", 4299) + `}`,
	`{"schema_version":3,"sign\u0061ture":"x","event_sequence":1}`,
	`{"schema_version":3,"a":1,"a":2}`,
	`{"schema_version":3,"a":{"b":1,"b":2}}`,
	`{"schema_version":3,"a":"\ud800"}`,
	"{\"schema_version\":3,\"a\":\"\xff\"}",
	"\xef\xbb\xbf{\"schema_version\":3}",
	`[{"schema_version":3}]`,
	`{"schema_version":3}x`,
	`{}`,
}

// TestCanonicalUnsignedDiff: the new canonical form equals the old one on
// the vector files and the adversarial objects.
func TestCanonicalUnsignedDiff(t *testing.T) {
	for _, s := range adversarialCapabilities {
		diffCanonical(t, []byte(s))
	}
	for _, data := range vectorJSON(t) {
		diffCanonical(t, data)
	}
	// A few the new code must answer in a known way.
	d, _ := pyjson.Parse([]byte(adversarialCapabilities[0]), capabilityJSON)
	got, err := canonicalUnsigned(d)
	if want := "{\"a\":\"<>&\u2028\u2029</script>\",\"b\":\"<>&\u2028\",\"schema_version\":3}"; err != nil || string(got) != want {
		t.Errorf("canonical %q, %v; want %q", got, err, want)
	}
	d, _ = pyjson.Parse([]byte(adversarialCapabilities[6]), capabilityJSON)
	if got, err := canonicalUnsigned(d); err != nil || string(got) != `{"schema_version":1}` {
		t.Errorf("v1 exclusions: %q, %v", got, err)
	}
}

// vectorJSON is every JSON file under the Flow vectors' attended tree and
// this package's testdata.
func vectorJSON(t testing.TB) [][]byte {
	var out [][]byte
	for _, root := range []string{filepath.Join(flowVectors, "attended"), "testdata"} {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".json") {
				return err
			}
			data, err := os.ReadFile(p)
			out = append(out, data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// diffFacts fails t when the projector's reads of data — as a report, as a
// pause file and as a verified capability — differ from the old ones.
func diffFacts(t *testing.T, data []byte) {
	t.Helper()
	d, ok := flowrun.ParseObject(data)
	obj, oldOK := oldParseObject(data)
	if ok != oldOK {
		t.Fatalf("parse %v, old %v", ok, oldOK)
	}
	if !ok {
		return
	}
	// Report facts, whether or not CheckReport accepts the report.
	if got, want := factsOf(d), oldFactsOf(obj); !cmp.Equal(got, want, cmp.AllowUnexported(reportFacts{})) {
		t.Fatalf("facts %s\nin %.400q", cmp.Diff(want, got, cmp.AllowUnexported(reportFacts{})), data)
	}
	// Pause reads.
	oldCat, _ := oldStr(obj["category"])
	oldStatus, _ := oldStr(obj["status"])
	r := d.Root()
	if d.Str(d.Get(r, "category")) != oldCat || d.Str(d.Get(r, "status")) != oldStatus || pauseMarked(d) != oldPauseMarked(obj) {
		t.Fatalf("pause reads differ\nin %.400q", data)
	}
	// Capability summary (as if its signature verified).
	if got, want := summaryOf(&capability{doc: d, digest: "sha256:x"}), oldSummaryOf(obj, "sha256:x"); !cmp.Equal(got, want) {
		t.Fatalf("summary %s\nin %.400q", cmp.Diff(want, got), data)
	}
	diffCanonical(t, data)
}

// factsCorpus: the vector files, the adversarial capabilities and reports
// with every halt, result and pause shape the projector reads.
func factsCorpus(t testing.TB) [][]byte {
	out := vectorJSON(t)
	for _, s := range adversarialCapabilities {
		out = append(out, []byte(s))
	}
	for _, s := range []string{
		`{"success":true,"execution_outcome":null,"halt":null,"results":null}`,
		`{"success":"true","execution_outcome":"HALTED","started_at":"2026-01-02T03:04:05+00:00","halt":{"reason":"Please solve the CAPTCHA","observed_texts":["a","MFA code",3],"completed_intents":{"a":1}}}`,
		`{"success":false,"started_at":5,"halt":{"reason":7,"observed_texts":"captcha","completed_intents":["x","y"]}}`,
		`{"halt":{"observed_texts":[null,"enter the verification code"]},"results":[{"ok":false,"step_id":"<terminal>","before_png":"b","after_png":""},{"ok":true},3,{"ok":"false","step_id":"s","before_png":7,"after_png":"a"}]}`,
		`{"results":[{"ok":false,"step_id":"<terminal>","before_png":"b","after_png":"a"},{"skipped":true},{"exception_handled":true}]}`,
		`{"results":[{"ok":null},{"ok":false,"step_id":"\u003cterminal>","before_png":"x"}]}`,
		`{"results":{"0":{"ok":false}}}`,
		`{"category":"identity","status":"approved","reason":"two-factor"}`,
		`{"category":7,"status":null,"reason":["mfa"]}`,
		`{"category":"challenge","status":"weird","reason":"2fa needed"}`,
		`{"expires_at":"e","allowed_actions":["continue","teach"],"delivery_state":"delivered","source_identity_required":true,"source_identity":{"status":"verified"}}`,
		`{"expires_at":"e","allowed_actions":null,"delivery_state":"unknown","source_identity_required":null}`,
		`{"expires_at":"e","allowed_actions":["fly"],"delivery_state":"unknown"}`,
		`{"expires_at":"e","allowed_actions":"continue","delivery_state":"unknown"}`,
		`{"expires_at":1,"allowed_actions":[],"delivery_state":"unknown"}`,
		`{"expires_at":"e","allowed_actions":[],"delivery_state":"nope"}`,
		`{"expires_at":"e","allowed_actions":[],"delivery_state":"unknown","source_identity_required":"true"}`,
		`{"expires_at":"e","allowed_actions":[],"delivery_state":"unknown","source_identity_required":false,"source_identity":{"status":5}}`,
		`{"expires_at":"e","delivery_state":"unknown"}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestFactsDiff: the projector's reads agree with the old ones.
func TestFactsDiff(t *testing.T) {
	for _, data := range factsCorpus(t) {
		diffFacts(t, data)
	}
}

// FuzzFactsDiff: any bytes give the same report facts, pause reads,
// capability summary and canonical form from both implementations.
func FuzzFactsDiff(f *testing.F) {
	for _, data := range factsCorpus(f) {
		if len(data) <= 16<<10 { // larger files slow mutation and minimization down
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		diffFacts(t, data)
	})
}

// BenchmarkCapabilityDigest is the parse and canonical unsigned form of the
// vector capability (run-0001), new and old (legacy_test.go) side by side.
func BenchmarkCapabilityDigest(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(flowVectors, "attended/runs/run-0001/attended_capability.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pyjson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			d := new(pyjson.Doc)
			if d.Parse(data, capabilityJSON) != nil {
				b.Fatal("parse")
			}
			if _, err := canonicalUnsigned(d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("old", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			obj, ok := oldParseObject(data)
			if !ok {
				b.Fatal("parse")
			}
			if _, err := oldCanonicalUnsigned(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}
