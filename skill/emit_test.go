package skill

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// secret is planted in the names, intents and values of every synthetic
// fixture; it must reach no added byte, warning, error or JSON.
const secret = "Jane Roe MRN-9911 sk_live_secret"

const testVersion = "0.0.0-test"

var flowVectors = "../testdata/flow"

type emitCase struct {
	skillMD string // path of the input SKILL.md
	bundle  string // bundle folder to pair it with ("" = the vector's own)
	vector  string // a Flow-emitted vector folder used as is
	legacy  bool
	// unavailable: serve lists it as unavailable (emit needs --allow-unavailable)
	unavailable bool
	sealed      bool // scrypt makes every load slow: emit once only
	prepare     func(t *testing.T, bundleDir string)
}

var emitCases = map[string]emitCase{
	"mockmed-triage":   {vector: "skills/mockmed-triage-v3/mockmed-triage"},
	"unicode-params":   {vector: "skills/unicode-params/berpr-fung-triage-note-a-b-q-end-second-line"},
	"encounter-loop":   {vector: "skills/encounter-loop/save-encounter-for-each"},
	"program-subflows": {vector: "skills/program-subflows/program-with-subflows"},
	"sealed":           {skillMD: flowVectors + "/skills/mockmed-triage-v3/mockmed-triage/SKILL.md", bundle: "sealed/mockmed-triage-v3", sealed: true},
	"colon-name":       {skillMD: "colon-name", bundle: "plain/encounter-loop"},
	"hash-name":        {skillMD: "hash-name", bundle: "plain/encounter-loop"},
	"numeric-slug":     {skillMD: "numeric-slug", bundle: "plain/mockmed-triage-v3"},
	"no-params":        {skillMD: "no-params", bundle: "legacy/showcase-v1-no-manifest", legacy: true, prepare: dropParams},
	"crlf-body":        {skillMD: "crlf-body", bundle: "plain/mockmed-triage-v3"},
	"python-wrapped":   {skillMD: "python-wrapped", bundle: "plain/unicode-params"},
	"reserved-name":    {skillMD: "numeric-slug", bundle: "plain/mockmed-triage-v3", unavailable: true, prepare: reserveURL},
	"already-wrapped":  {skillMD: "already-wrapped", bundle: "plain/mockmed-triage-v3"},
}

// dropParams removes the legacy params of a manifest-less bundle, which
// needs no digest update.
func dropParams(t *testing.T, dir string) {
	p := filepath.Join(dir, "workflow.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	w["params"] = map[string]any{}
	out, _ := json.MarshalIndent(w, "", "  ")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// reserveURL adds a parameter named url (reserved: the run tool's own
// argument) to a bundle with an embedded manifest, as schema 3 (no default
// removals), and writes the matching content digest: the bundle verifies
// and serve lists it as unavailable.
func reserveURL(t *testing.T, dir string) {
	p := filepath.Join(dir, "workflow.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(data, &w); err != nil {
		t.Fatal(err)
	}
	m := w["manifest"].(map[string]any)
	delete(w, "manifest")
	w["schema_version"] = 3
	w["params"].(map[string]any)["url"] = "https://example.invalid/"
	raw, _ := json.Marshal(map[string]any{"files": m["file_hashes"], "workflow": w})
	canon, err := bundle.CanonicalJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	m["content_digest"] = hex.EncodeToString(sum[:])
	w["manifest"] = m
	out, _ := json.MarshalIndent(w, "", "  ")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

var nameLine = regexp.MustCompile(`(?m)^name: "?([^"\r\n]*)"?\r?$`)

// buildCase assembles the input skill folder of a case in a temp dir and
// returns its path.
func buildCase(t *testing.T, c emitCase) string {
	t.Helper()
	if c.vector != "" {
		dst := filepath.Join(t.TempDir(), filepath.Base(c.vector))
		copyFixture(t, filepath.Join(flowVectors, c.vector), dst)
		return dst
	}
	mdPath := c.skillMD
	if !strings.Contains(mdPath, "/") {
		mdPath = filepath.Join("..", "testdata", "skill", "flow", mdPath, "SKILL.md")
	}
	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	m := nameLine.FindSubmatch(md)
	if m == nil {
		t.Fatalf("%s: no name line", mdPath)
	}
	dst := filepath.Join(t.TempDir(), string(m[1]))
	copyFixture(t, filepath.Join(flowVectors, c.bundle), filepath.Join(dst, "bundle"))
	if err := os.WriteFile(filepath.Join(dst, "SKILL.md"), md, 0o644); err != nil {
		t.Fatal(err)
	}
	if c.prepare != nil {
		c.prepare(t, filepath.Join(dst, "bundle"))
	}
	return dst
}

func emitOpts(src, out string, c emitCase, warns *[]string) EmitOptions {
	return EmitOptions{
		FromFlowSkill: src, OutDir: out, AgentVersion: testVersion, AllowLegacy: c.legacy, AllowUnavailable: c.unavailable,
		BundleOptions: []bundle.Option{bundle.WithKey("test-passphrase")},
		Warn:          func(s string) { *warns = append(*warns, s) },
	}
}

// treeOf lists a folder: slash path → mode and content.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		fi, _ := d.Info()
		v := fi.Mode().String()
		if !d.IsDir() {
			data, _ := os.ReadFile(p)
			v += " " + string(data)
		}
		out[filepath.ToSlash(rel)] = v
		return nil
	})
	return out
}

// Goldens: every Flow-emitted vector plus the hazards. Regenerate with
// `go test ./skill -update` and review the diff.
func TestEmitGolden(t *testing.T) {
	for name, c := range emitCases {
		t.Run(name, func(t *testing.T) {
			src := buildCase(t, c)
			out := filepath.Join(t.TempDir(), "out")
			var warns []string
			res, err := Emit(context.Background(), emitOpts(src, out, c, &warns))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(res.SkillDir, "SKILL.md"))
			if err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("..", "testdata", "skill", "golden", name, "SKILL.md"), got)

			// The bundle is copied byte for byte.
			in, outTree := treeOf(t, filepath.Join(src, "bundle")), treeOf(t, filepath.Join(res.SkillDir, "bundle"))
			if diff := cmp.Diff(in, outTree); diff != "" {
				t.Errorf("bundle copy differs (-in +out):\n%s", diff)
			}
			// Flow's body is kept byte for byte.
			srcMD, _ := os.ReadFile(filepath.Join(src, "SKILL.md"))
			sf, _ := splitFile(srcMD)
			body, _ := cutAppendix(sf.Body())
			body, _ = replaceControls(body) // the one permitted change: control code points, not bytes
			if !bytes.Contains(got, body) {
				t.Error("output does not contain Flow's body verbatim")
			}
			checkNoSecret(t, got, body, warns, res)
			if c.sealed {
				return
			}

			// Emitting again gives the same tree (idempotent re-emit over
			// our own output: same workflow id, replaced atomically).
			first := treeOf(t, res.SkillDir)
			if _, err := Emit(context.Background(), emitOpts(src, out, c, &warns)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, treeOf(t, res.SkillDir)); diff != "" {
				t.Errorf("second emit differs:\n%s", diff)
			}
			// Re-wrapping our output in place changes nothing: wrap∘wrap = wrap.
			if _, err := Emit(context.Background(), emitOpts(res.SkillDir, out, c, &warns)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, treeOf(t, res.SkillDir)); diff != "" {
				t.Errorf("in-place re-wrap differs:\n%s", diff)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 1 {
				t.Errorf("out holds %d entries, want only the skill", len(entries))
			}
		})
	}
}

// checkNoSecret asserts the planted secret is in no byte we added: the
// output minus Flow's body and description, the warnings and the result.
func checkNoSecret(t *testing.T, got, body []byte, warns []string, res *EmitResult) {
	t.Helper()
	added := bytes.Replace(got, body, nil, 1)
	added = regexp.MustCompile(`(?m)^description: .*\n`).ReplaceAll(added, nil)
	if bytes.Contains(added, []byte(secret)) || bytes.Contains(added, []byte("sk_live_secret")) {
		t.Errorf("the secret reached an added byte:\n%s", added)
	}
	j, _ := json.Marshal(res)
	for _, s := range append(warns, string(j)) {
		if strings.Contains(s, "sk_live_secret") || strings.Contains(s, "MRN-9911") {
			t.Errorf("the secret reached a warning or the result: %s", s)
		}
	}
}

func TestEmitWarnings(t *testing.T) {
	tests := map[string][]string{
		"colon-name":      {"description contains YAML-significant text; used Flow's literal line"},
		"hash-name":       {"description contains YAML-significant text; used Flow's literal line"},
		"numeric-slug":    {"name contains YAML-significant text; used Flow's literal line"},
		"crlf-body":       {"SKILL.md body uses CRLF line endings; kept as is"},
		"already-wrapped": {"dropped frontmatter keys: license"},
		"no-params":       {"bundle is legacy_unverified: it is not integrity-checked, and serve lists it as unavailable with no run tool"},
		"mockmed-triage":  nil,
		"reserved-name":   {"serve lists this workflow as unavailable (reserved_parameter_name); the skill names no run tool", "name contains YAML-significant text; used Flow's literal line"},
		"unicode-params": {
			"description contains YAML-significant text; used Flow's literal line",
			"Field 'description' contains < or >; Claude's upload validator rejects it",
			"SKILL.md body held 1 control characters (NUL, C0 or C1); each was replaced by U+FFFD",
		},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			c := emitCases[name]
			var warns []string
			if _, err := Emit(context.Background(), emitOpts(buildCase(t, c), t.TempDir(), c, &warns)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, warns); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmitResult(t *testing.T) {
	c := emitCases["unicode-params"]
	var warns []string
	res, err := Emit(context.Background(), emitOpts(buildCase(t, c), t.TempDir(), c, &warns))
	if err != nil {
		t.Fatal(err)
	}
	want := &EmitResult{
		SkillDir: res.SkillDir, Name: "berpr-fung-triage-note-a-b-q-end-second-line",
		WorkflowID:    "workflow_0ac932a7a89bcf7b4d62bd34",
		BundleVersion: "sha256:6412e077a0fd3b732a9ee350c413f7588152724c6589b654dacbdd592f727752",
		BundleStatus:  "verified",
		// Names outside serve's rule under their alias.
		RequiredParams: []string{"dose_mg", "emoji_59936a", "line_sep_353957", "note", "patient", "patient_name", "priority", "visit_date"},
	}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

func TestEmitRefusals(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		build func(t *testing.T) (string, emitCase)
		want  error
	}{
		{"dashes-name", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "dashes-name", bundle: "plain/encounter-loop"}
			return buildCase(t, c), c
		}, ErrDescription},
		{"long-description", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "long-description", bundle: "plain/encounter-loop"}
			return buildCase(t, c), c
		}, ErrDescription},
		{"65-char slug", func(t *testing.T) (string, emitCase) {
			dst := filepath.Join(t.TempDir(), long)
			copyFixture(t, filepath.Join(flowVectors, "plain/encounter-loop"), filepath.Join(dst, "bundle"))
			os.WriteFile(filepath.Join(dst, "SKILL.md"), []byte("---\nname: "+long+"\ndescription: d\n---\n\n# x\n"), 0o644)
			return dst, emitCase{}
		}, ErrName},
		{"name differs from folder", func(t *testing.T) (string, emitCase) {
			dst := filepath.Join(t.TempDir(), "folder")
			copyFixture(t, filepath.Join(flowVectors, "plain/encounter-loop"), filepath.Join(dst, "bundle"))
			os.WriteFile(filepath.Join(dst, "SKILL.md"), []byte("---\nname: other\ndescription: d\n---\n\n# x\n"), 0o644)
			return dst, emitCase{}
		}, ErrName},
		{"tampered", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "tampered/workflow-edited"}
			return buildCase(t, c), c
		}, ErrBundle},
		{"template flipped", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "tampered/template-byte-flipped"}
			return buildCase(t, c), c
		}, ErrBundle},
		{"undecryptable", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "tampered/sealed-wrong-passphrase"}
			return buildCase(t, c), c
		}, ErrBundle},
		{"legacy without flag", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "legacy/showcase-v1-no-manifest"}
			return buildCase(t, c), c
		}, ErrBundle},
		{"no bundle", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "plain/encounter-loop"}
			dir := buildCase(t, c)
			os.RemoveAll(filepath.Join(dir, "bundle"))
			return dir, c
		}, ErrLayout},
		{"symlink", func(t *testing.T) (string, emitCase) {
			c := emitCase{skillMD: "colon-name", bundle: "plain/encounter-loop"}
			dir := buildCase(t, c)
			os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
			return dir, c
		}, ErrUnsafeArchive},
		{"no body newline", func(t *testing.T) (string, emitCase) {
			dst := filepath.Join(t.TempDir(), "demo")
			copyFixture(t, filepath.Join(flowVectors, "plain/encounter-loop"), filepath.Join(dst, "bundle"))
			os.WriteFile(filepath.Join(dst, "SKILL.md"), []byte("---\nname: demo\ndescription: d\n---\n\n# x"), 0o644)
			return dst, emitCase{}
		}, ErrLayout},
		{"other shape", func(t *testing.T) (string, emitCase) {
			dst := filepath.Join(t.TempDir(), "demo")
			copyFixture(t, filepath.Join(flowVectors, "plain/encounter-loop"), filepath.Join(dst, "bundle"))
			os.WriteFile(filepath.Join(dst, "SKILL.md"), []byte("---\nname: demo\ndescription: d\nversion: 2\n---\n\n# x\n"), 0o644)
			return dst, emitCase{}
		}, ErrFrontmatter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src, c := tt.build(t)
			out := filepath.Join(t.TempDir(), "out")
			var warns []string
			_, err := Emit(context.Background(), emitOpts(src, out, c, &warns))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), "sk_live_secret") || strings.Contains(err.Error(), "MRN-9911") {
				t.Errorf("error leaks the secret: %v", err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("a refused emit left %d entries in out", len(entries))
			}
		})
	}
}

func TestEmitConflict(t *testing.T) {
	out := t.TempDir()
	// A different skill (another workflow id) already sits at out/<name>.
	c := emitCases["mockmed-triage"]
	src := buildCase(t, c)
	other := filepath.Join(out, "mockmed-triage")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "SKILL.md"), []byte("---\nname: mockmed-triage\ndescription: mine\n---\n"), 0o644)
	var warns []string
	_, err := Emit(context.Background(), emitOpts(src, out, c, &warns))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "pass --force") {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "SKILL.md")); !strings.Contains(string(data), "mine") {
		t.Error("the refused emit touched the existing skill")
	}
	opt := emitOpts(src, out, c, &warns)
	opt.Force = true
	if _, err := Emit(context.Background(), opt); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(other, "SKILL.md")); !bytes.Contains(data, []byte(AppendixMarker)) {
		t.Error("--force did not replace the skill")
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("out holds %d entries after --force", len(entries))
	}
}

func TestWrapIdempotent(t *testing.T) {
	in := WrapInput{DirName: "mockmed-triage", WorkflowID: "workflow_0123456789abcdef01234567", BundleStatus: "verified",
		BundleVersion: "sha256:" + strings.Repeat("ab", 32), RequiredParams: []string{"note"}, AgentVersion: testVersion}
	src, _ := os.ReadFile(filepath.Join(flowVectors, "skills/mockmed-triage-v3/mockmed-triage/SKILL.md"))
	once, _, err := Wrap(src, in)
	if err != nil {
		t.Fatal(err)
	}
	twice, _, err := Wrap(once, in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(once, twice) {
		t.Errorf("wrap(wrap(x)) != wrap(x):\n%s", cmp.Diff(string(once), string(twice)))
	}
	// A newer agent replaces the appendix instead of appending a second one.
	in.RequiredParams = []string{"note", "other"}
	third, _, _ := Wrap(once, in)
	if bytes.Count(third, []byte(AppendixMarker)) != 1 || !bytes.Contains(third, []byte("`note`, `other`")) {
		t.Error("re-wrap did not replace the appendix")
	}
	// An unsafe parameter name is refused before rendering.
	in.RequiredParams = []string{"a`b"}
	if _, _, err := Wrap(src, in); !errors.Is(err, ErrInvalid) {
		t.Errorf("backtick parameter: err = %v", err)
	}
}

// FuzzFrontmatterRoundTrip: whatever the description, Wrap either refuses
// or writes frontmatter that decodes back to the normalised values and
// passes every skill rule.
func FuzzFrontmatterRoundTrip(f *testing.F) {
	for _, s := range []string{"Replay 'a: b' #2", "x\u2028y\u2029z\x85", `q"\`, "no", "123", "<a&b>", "tab\there", "é🩺"} {
		f.Add(s)
	}
	in := WrapInput{DirName: "demo", WorkflowID: "workflow_0123456789abcdef01234567", BundleStatus: "verified", AgentVersion: testVersion}
	f.Fuzz(func(t *testing.T, desc string) {
		if strings.ContainsAny(desc, "\n\r") {
			return // Flow writes the description on one line
		}
		src := []byte("---\nname: demo\ndescription: " + desc + "\n---\n\n# Demo\n")
		out, _, err := Wrap(src, in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error outside the tree: %v", err)
			}
			return
		}
		sf, findings := CheckSkillMD(out, "demo")
		for _, fd := range findings {
			if fd.Severity == SeverityError {
				t.Fatalf("wrapped output fails %s: %s", fd.ID, fd.Message)
			}
		}
		d, _ := sf.Get("description")
		norm := strings.Map(func(r rune) rune {
			if isControlOrSeparator(r) {
				return ' '
			}
			return r
		}, desc)
		if d != norm {
			t.Fatalf("description %q decoded as %q", norm, d)
		}
	})
}

// A Flow that writes no folder (or exits without output) is an unexpected
// layout; nothing is left in out.
func TestEmitFlowNoOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	var gotBundle, gotOut string
	_, err := Emit(context.Background(), EmitOptions{
		Bundle: filepath.Join(flowVectors, "plain/encounter-loop"), OutDir: out, AgentVersion: testVersion,
		RunFlow: func(_ context.Context, bundleDir, outDir string) error {
			gotBundle, gotOut = bundleDir, outDir
			return nil
		},
	})
	if !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "unexpected Flow output layout") {
		t.Fatalf("err = %v", err)
	}
	if !filepath.IsAbs(gotBundle) || !filepath.IsAbs(gotOut) || filepath.Dir(gotOut) != out {
		t.Errorf("the runner got %q and %q", gotBundle, gotOut)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("out holds %d entries", len(entries))
	}
}

// The runner's failure is wrapped in ErrFlow with its own text, and what it
// wrote is removed; without a runner a bundle cannot be emitted.
func TestEmitFlowFails(t *testing.T) {
	errExit := errors.New("exit code 3")
	for _, tc := range []struct {
		name string
		run  FlowEmitter
		want string
	}{
		{"exit code", func(_ context.Context, _, outDir string) error {
			os.MkdirAll(filepath.Join(outDir, "half", "bundle"), 0o755)
			return errExit
		}, "flow emit-skill failed: exit code 3"},
		{"no runner", nil, "flow emit-skill failed: no Flow runner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, err := Emit(context.Background(), EmitOptions{
				Bundle: filepath.Join(flowVectors, "plain/encounter-loop"), OutDir: out, AgentVersion: testVersion, RunFlow: tc.run,
			})
			if !errors.Is(err, ErrFlow) || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.run != nil && !errors.Is(err, errExit) {
				t.Errorf("err %v does not wrap the runner's", err)
			}
			if entries, _ := os.ReadDir(out); len(entries) != 0 {
				t.Errorf("out holds %d entries", len(entries))
			}
		})
	}
}

// TestEmitCardStarter: CardStarter adds bundle/openadapt-card.json, keyed
// by Flow's own parameter names, and changes nothing else of the bundle.
func TestEmitCardStarter(t *testing.T) {
	c := emitCases["unicode-params"]
	src := buildCase(t, c)
	var warns []string
	opt := emitOpts(src, t.TempDir(), c, &warns)
	opt.CardStarter = true
	res, err := Emit(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	card := filepath.Join(res.SkillDir, "bundle", cards.FileName)
	if res.CardStarter != card {
		t.Fatalf("CardStarter %q", res.CardStarter)
	}
	got, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(filepath.Join(src, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if want := cards.Starter(b.DeclaredParams()); !bytes.Equal(got, want) {
		t.Fatalf("starter:\n%s\nwant:\n%s", got, want)
	}
	if !bytes.Contains(got, []byte(`"emoji_🩺": {"description": ""}`)) {
		t.Errorf("starter not keyed by Flow's names:\n%s", got)
	}
	in, out := treeOf(t, filepath.Join(src, "bundle")), treeOf(t, filepath.Join(res.SkillDir, "bundle"))
	delete(out, cards.FileName)
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("bundle changed beyond the card (-in +out):\n%s", diff)
	}
}
