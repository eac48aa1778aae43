package attention

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

const flowVectors = "../../testdata/flow"

type vector struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Path     *string         `json:"path"`
	Expected json.RawMessage `json:"expected"`
}

func vectorOfKind(t *testing.T, kind string) vector {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(flowVectors, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Vectors []vector }
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, v := range m.Vectors {
		if v.Kind == kind {
			return v
		}
	}
	t.Fatalf("no %s vector", kind)
	return vector{}
}

// copyRoot copies testdata/flow/attended/runs into a temporary directory
// and gives the capability key mode 0600, which git does not keep.
func copyRoot(t *testing.T) string {
	t.Helper()
	src := filepath.Join(flowVectors, "attended", "runs")
	dst := filepath.Join(t.TempDir(), "runs")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dst, "run-0001", ".attended_capability.key"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// expectedItems returns the attention_root vector's items (without
// _run_dir) and their run directories.
func expectedItems(t *testing.T) ([]map[string]any, []string) {
	t.Helper()
	var exp struct {
		Items     []map[string]any `json:"items"`
		OpenCount int              `json:"open_count"`
	}
	if err := json.Unmarshal(vectorOfKind(t, "attention_root").Expected, &exp); err != nil {
		t.Fatal(err)
	}
	if exp.OpenCount != len(exp.Items) {
		t.Fatalf("open_count %d != %d items", exp.OpenCount, len(exp.Items))
	}
	var dirs []string
	for _, it := range exp.Items {
		dirs = append(dirs, it["_run_dir"].(string))
		delete(it, "_run_dir")
	}
	return exp.Items, dirs
}

func asMap(t *testing.T, it Item) map[string]any {
	t.Helper()
	data, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAttentionRootVector: the queue equals Flow's list_attention output for
// attended/runs, in order, field by field except headline and next_action,
// which are this project's copy for the same category.
func TestAttentionRootVector(t *testing.T) {
	root := copyRoot(t)
	want, dirs := expectedItems(t)
	got := List(root)
	if len(got) != len(want) {
		t.Fatalf("List gave %d items, want %d", len(got), len(want))
	}
	for i := range want {
		g := asMap(t, got[i])
		w := want[i]
		for _, k := range []string{"headline", "next_action"} {
			delete(w, k)
		}
		if g["headline"] != Headline(got[i].Category) || g["next_action"] != NextAction(got[i].Category) || g["headline"] == "" {
			t.Errorf("item %d: copy does not match category %q", i, got[i].Category)
		}
		delete(g, "headline")
		delete(g, "next_action")
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("item %d (%s) (-want +got):\n%s", i, dirs[i], diff)
		}
		if got[i].ID != ID(dirs[i]) {
			t.Errorf("item %d: id %s, want ID(%q) = %s", i, got[i].ID, dirs[i], ID(dirs[i]))
		}
		// get_attention_item equals the listed item.
		one, err := Get(root, got[i].ID)
		if err != nil {
			t.Errorf("Get(%s): %v", got[i].ID, err)
		} else if diff := cmp.Diff(got[i], one); diff != "" {
			t.Errorf("Get(%s) differs from List (-list +get):\n%s", got[i].ID, diff)
		}
		// ForRun gives the same item for the run directory.
		if fr := ForRun(root, dirs[i]); fr == nil || !cmp.Equal(got[i], *fr) {
			t.Errorf("ForRun(%s) = %+v", dirs[i], fr)
		}
	}
	if ForRun(root, "run-0003") != nil {
		t.Error("ForRun of the VERIFIED run-0003 gave an item")
	}
}

func TestIDs(t *testing.T) {
	for rel, want := range map[string]string{
		"run-0001":         "302aa61015d20d93ce981a9d",
		"nightly/run-0005": "496ca53a312c80b0927cb811",
	} {
		if got := ID(rel); got != want {
			t.Errorf("ID(%q) = %s, want %s", rel, got, want)
		}
	}
	if ID("") != ID(".") {
		t.Error(`ID("") != ID(".")`)
	}
}

// TestCapabilityVector checks the attended_capability vector: digest,
// signature, pause digest and transition digest.
func TestCapabilityVector(t *testing.T) {
	root := copyRoot(t)
	var exp struct {
		CapabilityDigest         string   `json:"capability_digest"`
		SignatureValid           bool     `json:"signature_valid_with_key_file"`
		PauseDigest              string   `json:"pause_digest"`
		ExpectedTransitionDigest string   `json:"expected_transition_digest"`
		AllowedActions           []string `json:"allowed_actions"`
		AttentionID              string   `json:"attention_id"`
		SampleRequest            json.RawMessage
		SampleRequestDigest      string `json:"sample_request_digest"`
	}
	v := vectorOfKind(t, "attended_capability")
	if err := json.Unmarshal(v.Expected, &exp); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "run-0001")
	c, err := loadCapability(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.digest != exp.CapabilityDigest || c.valid != exp.SignatureValid {
		t.Errorf("digest %s valid %v; want %s %v", c.digest, c.valid, exp.CapabilityDigest, exp.SignatureValid)
	}
	if ID("run-0001") != exp.AttentionID {
		t.Errorf("attention id %s, want %s", ID("run-0001"), exp.AttentionID)
	}

	// pause_digest = sha256(canonical(pending with status "pending")).
	pending := parseCanon(t, mustRead(t, filepath.Join(dir, "pending_escalation.json")))
	if k, _ := pending.Member(pending.Root(), "status"); k != pyjson.None {
		pending.Omit(k)
	}
	canon, err := pending.AppendCanonicalWith(nil, pending.Root(), "status", []byte(`"pending"`))
	if err != nil {
		t.Fatal(err)
	}
	if got := digestOf(canon); got != exp.PauseDigest {
		t.Errorf("pause digest %s, want %s", got, exp.PauseDigest)
	}
	// expected_transition_digest over the listed capability fields.
	capDoc := parseCanon(t, mustRead(t, filepath.Join(dir, "attended_capability.json")))
	keep := map[string]bool{}
	for _, k := range []string{"run_id", "workflow_name", "bundle_version", "step_index", "step_id", "state_id",
		"resume_from_index", "resume_from_step_id", "program_cursor_digest", "expected_next_transition"} {
		keep[k] = true
	}
	for k := range capDoc.Members(capDoc.Root()) {
		if !keep[capDoc.Str(k)] {
			capDoc.Omit(k)
		}
	}
	if canon, err = capDoc.AppendCanonical(nil, capDoc.Root()); err != nil {
		t.Fatal(err)
	}
	if got := digestOf(canon); got != exp.ExpectedTransitionDigest {
		t.Errorf("transition digest %s, want %s", got, exp.ExpectedTransitionDigest)
	}
	// The sample request digest, with the keys from the vector.
	var raw struct {
		SampleRequest json.RawMessage `json:"sample_request"`
	}
	_ = json.Unmarshal(v.Expected, &raw)
	req := parseCanon(t, raw.SampleRequest)
	if canon, err = req.AppendCanonical(nil, req.Root()); err != nil {
		t.Fatal(err)
	}
	if got := digestOf(canon); got != exp.SampleRequestDigest {
		t.Errorf("request digest %s, want %s", got, exp.SampleRequestDigest)
	}
	sum := capabilitySummary(dir)
	if sum == nil || !cmp.Equal(sum.AllowedActions, exp.AllowedActions) {
		t.Errorf("summary %+v", sum)
	}
}

// parseCanon parses data under the capability's input rules (Flow's
// digest rules, floats kept for their repr).
func parseCanon(t *testing.T, data []byte) *pyjson.Doc {
	t.Helper()
	d, err := pyjson.Parse(data, capabilityJSON)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func digestOf(canon []byte) string {
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
}

// TestCapabilityRefused: a bad HMAC, a key readable by others, a key of the
// wrong length or a symlinked key gives capability null, not a failure.
func TestCapabilityRefused(t *testing.T) {
	cases := map[string]func(t *testing.T, dir string){
		"bad hmac": func(t *testing.T, dir string) {
			p := filepath.Join(dir, "attended_capability.json")
			s := strings.Replace(string(mustRead(t, p)), `"signature": "hmac-sha256:e`, `"signature": "hmac-sha256:f`, 1)
			write(t, p, s, 0o644)
		},
		"edited field": func(t *testing.T, dir string) {
			p := filepath.Join(dir, "attended_capability.json")
			s := strings.Replace(string(mustRead(t, p)), `"delivery_state": "unknown"`, `"delivery_state": "delivered"`, 1)
			write(t, p, s, 0o644)
		},
		"key group readable": func(t *testing.T, dir string) {
			_ = os.Chmod(filepath.Join(dir, ".attended_capability.key"), 0o640)
		},
		"key short": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, ".attended_capability.key"), "short", 0o600)
		},
		"key symlink": func(t *testing.T, dir string) {
			k := filepath.Join(dir, ".attended_capability.key")
			_ = os.Rename(k, k+".real")
			_ = os.Symlink(k+".real", k)
		},
		"capability symlink": func(t *testing.T, dir string) {
			c := filepath.Join(dir, "attended_capability.json")
			_ = os.Rename(c, c+".real")
			_ = os.Symlink(c+".real", c)
		},
		"key missing": func(t *testing.T, dir string) {
			_ = os.Remove(filepath.Join(dir, ".attended_capability.key"))
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			root := copyRoot(t)
			mutate(t, filepath.Join(root, "run-0001"))
			it, err := Get(root, ID("run-0001"))
			if err != nil {
				t.Fatal(err)
			}
			if it.Capability != nil {
				t.Errorf("capability = %+v, want null", it.Capability)
			}
			if !it.DurablyPaused || it.Category != "human_required" {
				t.Errorf("item changed beyond the capability: %+v", it)
			}
		})
	}
}

// TestFixtureRuns covers the queue's cases beyond the vector: encrypted
// pause, rejected pause, unknown and challenge categories, needs review,
// invalid reports, terminal results.
func TestFixtureRuns(t *testing.T) {
	halted := `{"success":false,"started_at":"2026-01-02T03:04:05.5Z","execution_outcome":null,
		"halt":{"reason":"Jane Roe MRN-9911","observed_texts":["a","b","c"],"completed_intents":["x"]},
		"results":[{"step_id":"a","ok":false,"skipped":false,"exception_handled":false,"before_png":"steps/b.png","after_png":"steps/a.png"},
		           {"step_id":"<terminal>","ok":false,"skipped":false,"exception_handled":false,"before_png":null,"after_png":null}]}`
	success := `{"success":true,"started_at":"2026-01-02T03:04:05+00:00","execution_outcome":null,"halt":null,"results":[]}`
	str := func(s string) *string { return &s }
	tests := []struct {
		name  string
		files map[string]string
		want  *Item // nil: no item
	}{
		{"success without pause", map[string]string{"report.json": success}, nil},
		{"halt only", map[string]string{"report.json": halted}, &Item{
			CreatedAt: str("2026-01-02T03:04:05.500000+00:00"), Category: "operator_review", Status: "halted",
			ObservedTextCount: 3, CompletedIntentCount: 1,
			BeforeArtifactID: str("step-001-before"), AfterArtifactID: str("step-001-after")}},
		{"success with encrypted pause", map[string]string{"report.json": success, "pending_escalation.json.enc": "x"}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "operator_review", Status: "encrypted",
			DurablyPaused: true, EncryptedPause: true}},
		{"rejected pause", map[string]string{"report.json": halted, "pending_escalation.json": `{"status":"rejected","category":"identity","reason":"r"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05.500000+00:00"), Category: "identity", Status: "rejected",
			ObservedTextCount: 3, CompletedIntentCount: 1,
			BeforeArtifactID: str("step-001-before"), AfterArtifactID: str("step-001-after")}},
		{"continuing pause status reads pending", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"continuing","category":"delivery_uncertain"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "operator_review", Status: "pending", DurablyPaused: true}},
		{"mfa category with marker", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","category":"mfa","reason":"Enter the code for 2FA"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "human_required", HumanRequired: true, Status: "pending", DurablyPaused: true}},
		{"mfa inside a word is no marker", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","reason":"see mfa2 and xmfa"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "operator_review", Status: "pending", DurablyPaused: true}},
		{"category not a string counts as empty", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","category":7,"reason":"Press and hold the button"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "human_required", HumanRequired: true, Status: "pending", DurablyPaused: true}},
		{"unknown category with marker stays operator_review", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","category":"business_decision","reason":"captcha"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "operator_review", Status: "pending", DurablyPaused: true}},
		{"mfa token after a non-ASCII letter", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","reason":"émfa"}`}, &Item{
			CreatedAt: str("2026-01-02T03:04:05+00:00"), Category: "human_required", HumanRequired: true, Status: "pending", DurablyPaused: true}},
		{"needs review without pause", map[string]string{"report.json": `{"success":false,"execution_outcome":"FAILED","execution_profile":"standard","halt":{"reason":"captcha"},"results":[]}`}, &Item{
			Category: "operator_review", Status: "failed"}},
		{"invalid report without pause", map[string]string{"report.json": `{"success":true,"execution_outcome":"HALTED","halt":{}}`}, nil},
		{"invalid report with pause", map[string]string{"report.json": `[]`, "pending_escalation.json": `{"status":"approved","category":"halt"}`}, &Item{
			Category: "halt", Status: "approved", DurablyPaused: true}},
		// Refused by pyjson's strict core: the report is invalid (treated as
		// absent) and the pause file is not an object, exactly as for a file
		// that is not JSON. encoding/json would have projected both.
		{"duplicate-key report without pause", map[string]string{"report.json": `{"success":false,` + halted[1:]}, nil},
		{"invalid UTF-8 report without pause", map[string]string{"report.json": strings.Replace(halted, "Jane Roe", "Jane \xffRoe", 1)}, nil},
		{"duplicate-key report with pause", map[string]string{"report.json": `{"success":false,` + halted[1:], "pending_escalation.json": `{"status":"approved","category":"halt"}`}, &Item{
			Category: "halt", Status: "approved", DurablyPaused: true}},
		{"duplicate-key pause is absent", map[string]string{"report.json": success, "pending_escalation.json": `{"status":"pending","status":"pending","category":"mfa"}`}, nil},
		{"invalid UTF-8 pause is absent", map[string]string{"report.json": success, "pending_escalation.json": "{\"status\":\"pending\",\"reason\":\"\xff\"}"}, nil},
		{"pause not an object is absent", map[string]string{"report.json": success, "pending_escalation.json": `["pending"]`}, nil},
		{"only a terminal failure", map[string]string{"report.json": `{"success":false,"halt":{"reason":"x"},"results":[{"step_id":"<terminal>","ok":false,"before_png":"b.png"}]}`}, &Item{
			Category: "operator_review", Status: "halted", BeforeArtifactID: str("step-001-before")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for name, body := range tt.files {
				write(t, filepath.Join(root, "run-x", name), body, 0o600)
			}
			items := List(root)
			if tt.want == nil {
				if len(items) != 0 {
					t.Errorf("items = %+v, want none", items)
				}
				return
			}
			want := *tt.want
			want.ID = ID("run-x")
			want.Headline, want.NextAction = Headline(want.Category), NextAction(want.Category)
			if len(items) != 1 {
				t.Fatalf("%d items", len(items))
			}
			if diff := cmp.Diff(want, items[0]); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestScanSafety: symlinks are never followed, depth stops at 2, run
// directories do not nest, and a symlinked root is empty.
func TestScanSafety(t *testing.T) {
	halt := `{"success":false,"halt":{"reason":"x"},"results":[]}`
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "run-out", "report.json"), halt, 0o600)
	write(t, filepath.Join(root, "a", "report.json"), halt, 0o600)
	write(t, filepath.Join(root, "a", "nested", "report.json"), halt, 0o600) // inside a run dir
	write(t, filepath.Join(root, "b", "c", "report.json"), halt, 0o600)      // depth 2
	write(t, filepath.Join(root, "d", "e", "f", "report.json"), halt, 0o600) // depth 3
	write(t, filepath.Join(root, "real", "report.json"), halt, 0o600)
	must(t, os.Symlink(filepath.Join(outside, "run-out"), filepath.Join(root, "linked-dir")))
	must(t, os.Symlink(outside, filepath.Join(root, "linked-parent")))
	write(t, filepath.Join(root, "g", "x.json"), halt, 0o600)
	must(t, os.Symlink(filepath.Join(root, "g", "x.json"), filepath.Join(root, "g", "report.json")))

	var got []string
	s, _ := newScanner(root)
	got = s.runDirs()
	if diff := cmp.Diff([]string{"a", "b/c", "real"}, got); diff != "" {
		t.Errorf("run dirs (-want +got):\n%s", diff)
	}
	if n := len(List(root)); n != 3 {
		t.Errorf("List gave %d items", n)
	}
	link := filepath.Join(t.TempDir(), "runs-link")
	must(t, os.Symlink(root, link))
	if items := List(link); items == nil || len(items) != 0 {
		t.Errorf("symlinked root: %+v", items)
	}
	if _, err := Get(link, ID("a")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get through a symlinked root: %v", err)
	}
	if items := List(filepath.Join(root, "missing")); items == nil || len(items) != 0 {
		t.Errorf("missing root: %+v", items)
	}
	for _, id := range []string{"../run-one", "a/b", "", strings.Repeat("0", 23), strings.Repeat("0", 24), strings.ToUpper(ID("a")), ID("linked-dir"), ID("d/e/f"), ID("a/nested")} {
		if _, err := Get(root, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", id, err)
		}
	}
	for _, rel := range []string{"..", "../x", "/abs", "d/e/f", "linked-dir", "a/nested", "."} {
		if ForRun(root, rel) != nil {
			t.Errorf("ForRun(%q) gave an item", rel)
		}
	}
	// The root itself as a run directory.
	write(t, filepath.Join(root, "report.json"), halt, 0o600)
	items := List(root)
	if len(items) != 1 || items[0].ID != ID(".") {
		t.Errorf("root run dir: %+v", items)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoProtectedValues: planted text in every protected place never
// reaches an item.
func TestNoProtectedValues(t *testing.T) {
	canary := "Jane Roe MRN-9911 sk_live_secret /private/protected/path"
	root := t.TempDir()
	report := `{"success":false,"started_at":"` + canary + `","workflow_name":"` + canary + `","params":{"note":"` + canary + `"},
		"halt":{"reason":"` + canary + `","intent":"` + canary + `","observed_texts":["` + canary + `"],"completed_intents":["` + canary + `"]},
		"results":[{"step_id":"` + canary + `","intent":"` + canary + `","error":"` + canary + `","ok":false,"before_png":"` + canary + `"}]}`
	pause := `{"status":"` + canary + `","category":"` + canary + `","reason":"` + canary + `","params":{"x":"` + canary + `"},"workflow_name":"` + canary + `"}`
	write(t, filepath.Join(root, "Jane Roe MRN-9911", "report.json"), report, 0o600)
	write(t, filepath.Join(root, "Jane Roe MRN-9911", "pending_escalation.json"), pause, 0o600)
	items := List(root)
	if len(items) != 1 {
		t.Fatalf("%d items", len(items))
	}
	data, _ := json.Marshal(items)
	for _, tok := range []string{"Jane Roe", "MRN-9911", "sk_live_secret", "/private/protected/path"} {
		if strings.Contains(string(data), tok) {
			t.Errorf("item leaks %q: %s", tok, data)
		}
	}
}

func TestNormalizeISO(t *testing.T) {
	tests := map[string]string{
		"2026-07-18T12:00:00+00:00":         "2026-07-18T12:00:00+00:00",
		"2026-07-27T23:59:59Z":              "2026-07-27T23:59:59+00:00",
		"2026-07-27T23:59:59.5Z":            "2026-07-27T23:59:59.500000+00:00",
		"2026-07-27T23:59:59.1234567+02:00": "2026-07-27T23:59:59.123456+02:00",
		"2026-07-27T23:59:59.000000Z":       "2026-07-27T23:59:59+00:00",
		"2026-07-27 23:59":                  "2026-07-27T23:59:00",
		"2026-07-27T23":                     "2026-07-27T23:00:00",
		"2026-07-27":                        "2026-07-27T00:00:00",
		"20260727T235959Z":                  "2026-07-27T23:59:59+00:00",
		"2026-07-27T10:00:00-0530":          "2026-07-27T10:00:00-05:30",
		"2026-07-27T10:00:00-00:00":         "2026-07-27T10:00:00+00:00",
		"2026-07-27T10:00:00+05:30:15":      "2026-07-27T10:00:00+05:30:15",
		"2024-02-29T00:00:00":               "2024-02-29T00:00:00",
		// Checked against CPython 3.11.7 datetime.fromisoformat.
		"2026-07-27T12:00:00,5":             "2026-07-27T12:00:00.500000",
		"2026-07-27T1200":                   "2026-07-27T12:00:00",
		"2026-07-27T12:00:00+05":            "2026-07-27T12:00:00+05:00",
		"2026-07-27X12:00":                  "2026-07-27T12:00:00",
		"2026-07-27T12:00:00.5+05:30:15.25": "2026-07-27T12:00:00.500000+05:30:15.250000",
		"2026-07-27T12:00Z":                 "2026-07-27T12:00:00+00:00",
		"2026-07-27T12:00:00.123":           "2026-07-27T12:00:00.123000",
		"20260727":                          "2026-07-27T00:00:00",
		"2026-07-27T12:00:00+0530":          "2026-07-27T12:00:00+05:30",
		"2026-07-27T123000":                 "2026-07-27T12:30:00",
		"0001-01-01T00:00:00":               "0001-01-01T00:00:00",
		"2026-07-27T12:00:00.1234567890123": "2026-07-27T12:00:00.123456",
	}
	for in, want := range tests {
		if got, ok := normalizeISO(in); !ok || got != want {
			t.Errorf("normalizeISO(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "yesterday", "2026-13-01", "2023-02-29", "2026-07-27T24:00:00", "2026-07-27T12:60", "2026-07-27T12:00:00+24:00", "2026-07-27T1", "2026-07-27T12:00:00.", "Jane Roe", "2026-07-27T12:30:00Z+01:00"} {
		if got, ok := normalizeISO(in); ok {
			t.Errorf("normalizeISO(%q) = %q, want invalid", in, got)
		}
	}
}

// FuzzNormalizeISO: no input panics, and an accepted value is a fixed point.
func FuzzNormalizeISO(f *testing.F) {
	for _, s := range []string{"2026-07-18T12:00:00+00:00", "2026-07-27T23:59:59.5Z", "20260727T235959Z", "2026-07-27T12:00:00.5+05:30:15.25", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := normalizeISO(s)
		if !ok {
			return
		}
		again, ok := normalizeISO(out)
		if !ok || again != out {
			t.Fatalf("normalizeISO(%q) = %q, then %q %v", s, out, again, ok)
		}
	})
}

// BenchmarkList projects a runs root of 200 HALTED runs (each a 5 KiB
// report with a halt) plus the four-run vector layout.
func BenchmarkList(b *testing.B) {
	report, err := os.ReadFile(filepath.Join(flowVectors, "attended/runs/run-0002/report.json"))
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	for i := range 200 {
		dir := filepath.Join(root, fmt.Sprintf("run-%04d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "report.json"), report, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			resetReportCache()
			if n := len(List(root)); n != 200 {
				b.Fatalf("%d items", n)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if n := len(List(root)); n != 200 {
				b.Fatalf("%d items", n)
			}
		}
	})
}

func resetReportCache() {
	reportCache.Lock()
	reportCache.m = map[string]cachedFacts{}
	reportCache.Unlock()
}

// TestReportCache: a replaced or edited report is re-read.
func TestReportCache(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "run-a", "report.json")
	write(t, p, `{"success":false,"halt":{"reason":"x","observed_texts":["a"]},"results":[]}`, 0o600)
	if items := List(root); len(items) != 1 || items[0].ObservedTextCount != 1 {
		t.Fatalf("first: %+v", items)
	}
	// Flow's atomic replace: a new file renamed over the old one.
	tmp := p + ".tmp"
	write(t, tmp, `{"success":false,"halt":{"reason":"x","observed_texts":["a","b"]},"results":[]}`, 0o600)
	must(t, os.Rename(tmp, p))
	if items := List(root); len(items) != 1 || items[0].ObservedTextCount != 2 {
		t.Fatalf("after replace: %+v", items)
	}
	// An in-place edit to a success report drops the item.
	write(t, p, `{"success":true,"halt":null,"results":[],"padding":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}`, 0o600)
	if items := List(root); len(items) != 0 {
		t.Fatalf("after edit: %+v", items)
	}
}

// FuzzProject: any report and pause bytes give at most one item, never a
// panic, always enum values, and never any of the planted text.
func FuzzProject(f *testing.F) {
	for _, rel := range []string{"run-0001", "run-0002", "run-0004", "nightly/run-0005"} {
		data, err := os.ReadFile(filepath.Join(flowVectors, "attended/runs", rel, "report.json"))
		if err != nil {
			f.Fatal(err)
		}
		pause, _ := os.ReadFile(filepath.Join(flowVectors, "attended/runs", rel, "pending_escalation.json"))
		capability, _ := os.ReadFile(filepath.Join(flowVectors, "attended/runs", rel, "attended_capability.json"))
		f.Add(data, pause, capability)
	}
	f.Add([]byte(`{"success":false,"halt":{"reason":"SECRET captcha"},"results":[{"ok":false,"before_png":"SECRET"}]}`),
		[]byte(`{"status":"SECRET","category":"SECRET","reason":"SECRET mfa"}`),
		[]byte(`{"schema_version":1,"signature":"SECRET","expires_at":"SECRET"}`))
	key, err := os.ReadFile(filepath.Join(flowVectors, "attended/runs/run-0001/.attended_capability.key"))
	if err != nil {
		f.Fatal(err)
	}
	categories := map[string]bool{"operator_review": true}
	for c := range knownCategories {
		categories[c] = true
	}
	statuses := map[string]bool{"pending": true, "approved": true, "rejected": true, "encrypted": true,
		"halted": true, "completed_unverified": true, "failed": true, "rolled_back": true}
	f.Fuzz(func(t *testing.T, report, pause, capability []byte) {
		root, err := os.MkdirTemp("", "attention-fuzz-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(root)
		dir := filepath.Join(root, "run-SECRET")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "report.json"), report, 0o600)
		if len(pause) > 0 {
			_ = os.WriteFile(filepath.Join(dir, "pending_escalation.json"), pause, 0o600)
		}
		if len(capability) > 0 {
			_ = os.WriteFile(filepath.Join(dir, "attended_capability.json"), capability, 0o600)
			_ = os.WriteFile(filepath.Join(dir, ".attended_capability.key"), key, 0o600)
		}
		items := List(root)
		if len(items) > 1 {
			t.Fatalf("%d items", len(items))
		}
		for _, it := range items {
			if !categories[it.Category] || !statuses[it.Status] || it.Headline == "" {
				t.Fatalf("bad enum: %+v", it)
			}
			data, _ := json.Marshal(it)
			if bytes.Contains(data, []byte("SECRET")) {
				t.Fatalf("leak: %s", data)
			}
		}
	})
}

// TestConcurrentList: List and Get from many goroutines share the cache
// safely (run under -race).
func TestConcurrentList(t *testing.T) {
	root := copyRoot(t)
	want := List(root)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				resetReportCache()
			}
			if got := List(root); !cmp.Equal(want, got) {
				t.Errorf("List differs")
			}
			if _, err := Get(root, want[i%len(want)].ID); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}
