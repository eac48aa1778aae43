package flowrun

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The classifier, CheckReport, the summary and the halt bytes moved from
// raw-member helpers (legacy_test.go) onto pyjson handles.
// These tests hold the two to the same answers on every input.

// diffReport fails t when the pyjson classifier and the raw-member one
// disagree on report in any observable way.
func diffReport(t *testing.T, report []byte) {
	t.Helper()
	d, ok := ParseObject(report)
	obj, oldOK := oldParseObject(report)
	if ok != oldOK {
		t.Fatalf("ParseObject ok %v, old %v\n%.600q", ok, oldOK, report)
	}
	if !ok {
		return
	}
	if got, want := classifyObject(d), oldClassifyObject(obj); got != want {
		t.Fatalf("classifyObject %+v, old %+v\n%.600q", got, want, report)
	}
	for _, code := range []int{0, 1, 2, 3, -9} {
		if got, want := classifyExitObject(code, d), oldClassifyExitObject(code, obj); got != want {
			t.Fatalf("exit %d: %+v, old %+v\n%.600q", code, got, want, report)
		}
	}
	if got, want := errText(CheckReportObject(d)), errText(oldCheckReportObject(obj)); got != want {
		t.Fatalf("CheckReportObject %q, old %q\n%.600q", got, want, report)
	}
	got, _ := json.Marshal(summarizeObject(d))
	want, _ := json.Marshal(oldSummarizeObject(obj))
	if !bytes.Equal(got, want) {
		t.Fatalf("summary %s, old %s\n%.600q", got, want, report)
	}
	if h, oh := haltObject(d), oldHaltObject(obj); !bytes.Equal(h, oh) || (h == nil) != (oh == nil) {
		t.Fatalf("halt %q, old %q\n%.600q", h, oh, report)
	}
}

// oldClassifyExitObject is the exit-code step over the old classifier.
func oldClassifyExitObject(code int, obj map[string]json.RawMessage) Verdict {
	if code == 2 {
		return Verdict{Status: StatusRefused}
	}
	return exitVerdict(code, oldClassifyObject(obj))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// diffCorpus is every JSON file of the Flow vectors (reports, run files,
// manifests: objects of every shape Flow writes).
func diffCorpus(t testing.TB) [][]byte {
	var out [][]byte
	err := filepath.WalkDir(flowVectors, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		if fi, err := e.Info(); err != nil || fi.Size() > 1<<20 {
			return err
		}
		data, err := os.ReadFile(p)
		out = append(out, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClassifyDiffVectors: every vector JSON file, each report vector under
// every single-member rewrite of the adversarial value list, and generated
// reports give the same answers from both implementations.
func TestClassifyDiffVectors(t *testing.T) {
	corpus := diffCorpus(t)
	if len(corpus) < 20 {
		t.Fatalf("only %d vector files", len(corpus))
	}
	for _, data := range corpus {
		diffReport(t, data)
	}
	// Member rewrites of the report vectors, top level and in the envelope
	// (every third vector: they share their shapes, and the test stays
	// short; the fuzz target covers all of them).
	m := loadManifest(t)
	n, i := 0, 0
	for _, v := range m.Vectors {
		if v.Kind != "report" || v.Path == nil {
			continue
		}
		if i++; i%3 != 1 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(flowVectors, *v.Path))
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(data, &top) != nil {
			continue
		}
		keys := append([]string{}, topKeys...)
		for _, k := range envKeys {
			keys = append(keys, "outcome_envelope."+k)
		}
		for _, key := range keys {
			for _, val := range scalarPool {
				if mutated := rewrite(top, key, val); mutated != nil {
					diffReport(t, mutated)
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no report vector was rewritten")
	}
	templates := reportTemplates(t)
	rng := rand.New(rand.NewPCG(12, 1))
	seed := make([]byte, 256)
	for range 3000 {
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		diffReport(t, genReport(seed))
		diffReport(t, mutateReport(templates, seed))
	}
}

// rewrite returns top with key set to val; "outcome_envelope.<k>" names a
// member of the envelope (a report without an object envelope is skipped).
func rewrite(top map[string]json.RawMessage, key, val string) []byte {
	c := make(map[string]json.RawMessage, len(top)+1)
	for k, v := range top {
		c[k] = v
	}
	if ek, ok := strings.CutPrefix(key, "outcome_envelope."); ok {
		var e map[string]json.RawMessage
		if json.Unmarshal(c["outcome_envelope"], &e) != nil || e == nil {
			return nil
		}
		e[ek] = json.RawMessage(val)
		c["outcome_envelope"], _ = json.Marshal(e)
	} else {
		c[key] = json.RawMessage(val)
	}
	b, _ := json.Marshal(c)
	return b
}

// maxFuzzSeed bounds the seeds taken from the vectors: the bundles'
// workflow.json files (59 KiB) slow every mutation and minimization down
// and add nothing a report does not have.
const maxFuzzSeed = 16 << 10

// FuzzClassifyDiff: the raw input and a report generated from it give the
// same answers from both implementations.
func FuzzClassifyDiff(f *testing.F) {
	for _, data := range diffCorpus(f) {
		if len(data) <= maxFuzzSeed {
			f.Add(data)
		}
	}
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07"))
	templates := reportTemplates(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		diffReport(t, data)
		diffReport(t, genReport(data))
		diffReport(t, mutateReport(templates, data))
	})
}

// The vocabulary of the generator: the members the classifier reads, at
// each place, and values on both sides of every rule.
var (
	topKeys = []string{"execution_outcome", "success", "execution_profile", "production_eligible",
		"outcome_envelope", "execution_completed", "model_calls", "external_network_calls", "started_at",
		"halt", "results", "governed_qualification_case_id_sha256", "qualification_evidence_only",
		"heal_count", "total_ms", "screenshots_may_leave_box"}
	envKeys = []string{"outcome", "profile", "production_eligible", "execution_completed", "model_calls",
		"external_network_calls", "qualification_evidence_only", "required_contracts", "passed_contracts",
		"evidence_classes", "postcondition_evidence", "workflow_contract_sha256", "compensation_actions"}
	countKeys    = []string{"authorization", "identity", "postcondition", "effect"}
	resultKeys   = []string{"ok", "skipped", "exception_handled", "safety_halt", "step_id", "before_png", "after_png"}
	haltKeys     = []string{"observed_texts", "completed_intents", "reason"}
	evidenceKeys = []string{"verdict", "workflow_contract_sha256"}
	scalarPool   = []string{"null", "true", "false", "0", "1", "2", "-1", "-0", "0.0", "1.0", "1e0", "1E0", "1e2",
		"100", "0.5", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
		"100000000000000000000000000000", "1e400", "-1e400", "1.00000000000000000001", "1.0000000000000000000000001",
		`"VERIFIED"`, `"HALTED"`, `"FAILED"`, `"ROLLED_BACK"`, `"COMPLETED_UNVERIFIED"`, `"\u0056ERIFIED"`,
		`"demo"`, `"standard"`, `"regulated"`, `"passed"`, `"failed"`, `"postcondition"`, `"compensation"`,
		`"authorization"`, `"c1"`, `"c\u0031"`, `""`, `"x"`, `"true"`, `"<terminal>"`, `"2026-01-01T00:00:00Z"`,
		`[]`, `{}`, `[null]`, `["a"]`, `[1]`, `{"a":1}`, `{"a":1.0}`}
)

// gen is a deterministic reader of fuzz bytes (zero once they run out).
type gen struct {
	b []byte
	i int
}

func (g *gen) next() int {
	if g.i >= len(g.b) {
		g.i++
		return 0
	}
	c := g.b[g.i]
	g.i++
	return int(c)
}

func (g *gen) pick(list []string) string { return list[g.next()%len(list)] }

func (g *gen) ws(buf *bytes.Buffer) {
	if c := g.next(); c%5 == 0 {
		buf.WriteString([]string{" ", "\n  ", "\t", "\r\n"}[(c/5)%4])
	}
}

// genReport builds a report object from fuzz bytes: members of the
// vocabulary above with nested envelopes, counts, results, halts and
// evidence lists, whitespace between tokens, an occasional duplicate key.
func genReport(b []byte) []byte {
	g := &gen{b: b}
	var buf bytes.Buffer
	g.object(&buf, topKeys, 0)
	return buf.Bytes()
}

func (g *gen) object(buf *bytes.Buffer, keys []string, depth int) {
	buf.WriteByte('{')
	n := g.next() % (len(keys) + 1)
	seen := map[string]bool{}
	first := true
	for range n {
		k := g.pick(keys)
		if seen[k] && g.next() != 255 {
			continue // a duplicate now and then: both must refuse it
		}
		seen[k] = true
		if !first {
			buf.WriteByte(',')
		}
		first = false
		g.ws(buf)
		buf.WriteString(`"` + k + `"`)
		g.ws(buf)
		buf.WriteByte(':')
		g.ws(buf)
		g.value(buf, k, depth+1)
		g.ws(buf)
	}
	buf.WriteByte('}')
}

func (g *gen) value(buf *bytes.Buffer, key string, depth int) {
	c := g.next()
	if depth > 4 || c%3 == 0 {
		buf.WriteString(g.pick(scalarPool))
		return
	}
	var sub []string
	list := false
	switch key {
	case "outcome_envelope":
		sub = envKeys
	case "required_contracts", "passed_contracts":
		sub = countKeys
	case "results":
		sub, list = resultKeys, true
	case "halt":
		sub = haltKeys
	case "postcondition_evidence":
		sub, list = evidenceKeys, true
	case "evidence_classes", "observed_texts", "completed_intents":
		list = true
	}
	if c%3 == 1 || (!list && sub == nil) {
		if sub == nil {
			sub = topKeys
		}
		g.object(buf, sub, depth)
		return
	}
	buf.WriteByte('[')
	n := g.next() % 4
	for i := range n {
		if i > 0 {
			buf.WriteByte(',')
		}
		g.ws(buf)
		if sub != nil && g.next()%4 != 0 {
			g.object(buf, sub, depth+1)
		} else {
			buf.WriteString(g.pick(scalarPool))
		}
	}
	buf.WriteByte(']')
}

// reportTemplates are the report vectors as trees (numbers kept as tokens).
func reportTemplates(t testing.TB) []map[string]any {
	var out []map[string]any
	for _, v := range loadManifest(t).Vectors {
		if v.Kind != "report" || v.Path == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(flowVectors, *v.Path))
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) == nil && m != nil {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		t.Fatal("no report templates")
	}
	return out
}

// mutatePaths are the places a mutation writes; "#" is an array index.
var mutatePaths = func() [][]string {
	var p [][]string
	for _, k := range topKeys {
		p = append(p, []string{k})
	}
	for _, k := range envKeys {
		p = append(p, []string{"outcome_envelope", k})
	}
	for _, k := range countKeys {
		p = append(p, []string{"outcome_envelope", "required_contracts", k},
			[]string{"outcome_envelope", "passed_contracts", k})
	}
	for _, k := range evidenceKeys {
		p = append(p, []string{"outcome_envelope", "postcondition_evidence", "#", k})
	}
	for _, k := range resultKeys {
		p = append(p, []string{"results", "#", k})
	}
	for _, k := range haltKeys {
		p = append(p, []string{"halt", k})
	}
	return p
}()

// mutateReport copies a template chosen by the fuzz bytes and applies one
// to four writes or deletions along mutatePaths: reports that pass the
// classifier and reach CheckReport's deeper rules.
func mutateReport(templates []map[string]any, b []byte) []byte {
	g := &gen{b: b}
	root := deepCopy(templates[g.next()%len(templates)]).(map[string]any)
	for range 1 + g.next()%4 {
		path := mutatePaths[g.next()%len(mutatePaths)]
		var val any = json.RawMessage(g.pick(scalarPool))
		if g.next()%8 == 0 {
			val = nil // delete
		} else if g.next()%4 == 0 {
			var buf bytes.Buffer
			g.value(&buf, path[len(path)-1], 2)
			val = json.RawMessage(buf.Bytes())
		}
		setPath(root, path, val, g)
	}
	out, err := json.Marshal(root)
	if err != nil {
		return nil
	}
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// setPath writes val (nil: deletes) at path under obj when every step
// exists with the right shape.
func setPath(obj map[string]any, path []string, val any, g *gen) {
	if len(path) == 1 {
		if val == nil {
			delete(obj, path[0])
		} else {
			obj[path[0]] = val
		}
		return
	}
	next := obj[path[0]]
	if path[1] == "#" {
		l, ok := next.([]any)
		if !ok || len(l) == 0 {
			return
		}
		if m, ok := l[g.next()%len(l)].(map[string]any); ok {
			setPath(m, path[2:], val, g)
		}
		return
	}
	if m, ok := next.(map[string]any); ok {
		setPath(m, path[1:], val, g)
	}
}
