package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

const testPass = "CANARY-KEY-passphrase"

func mustKind(t *testing.T, b *Bundle, want ErrorKind) {
	t.Helper()
	if b == nil {
		t.Fatal("nil bundle")
	}
	if want == "" {
		if b.Err != nil || b.ErrorKind != "" {
			t.Fatalf("unexpected failure %v", b.Err)
		}
		return
	}
	if b.Integrity != Failed || b.ErrorKind != want {
		t.Fatalf("integrity %s kind %q (%v), want failed %s", b.Integrity, b.ErrorKind, b.Err, want)
	}
	if !errors.Is(b.Err, want.Sentinel()) || !errors.Is(b.Err, ErrBundle) || KindOf(b.Err) != want {
		t.Fatalf("errors.Is(%v, sentinel of %s) is false", b.Err, want)
	}
	for k, s := range kindSentinel {
		if k != want && errors.Is(b.Err, s) {
			t.Fatalf("error %v also matches %s", b.Err, k)
		}
	}
	if b.Loaded() || b.StepCount != 0 || b.Params != nil || b.ContentDigest != "" {
		t.Fatalf("failed bundle carries metadata: %+v", b)
	}
	if _, err := b.Protected(); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Protected() on a failed bundle: %v", err)
	}
	assertNoLeak(t, b)
}

// assertNoLeak checks that error text carries no protected value, key or
// absolute path.
func assertNoLeak(t *testing.T, b *Bundle) {
	t.Helper()
	if b.Err == nil {
		return
	}
	msg := b.Err.Error()
	for _, bad := range []string{"CANARY", testPass, b.Dir, os.TempDir()} {
		if bad != "" && strings.Contains(msg, bad) {
			t.Fatalf("error text %q leaks %q", msg, bad)
		}
	}
}

func loadT(t *testing.T, dir string, opts ...Option) *Bundle {
	t.Helper()
	b, err := Load(dir, opts...)
	if b == nil {
		t.Fatalf("Load: %v", err)
	}
	if err != b.Err {
		t.Fatalf("Load returned %v, bundle error %v", err, b.Err)
	}
	return b
}

func TestSyntheticPlainVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	digest := defaultSynth().write(t, dir)
	b := loadT(t, dir)
	mustKind(t, b, "")
	if b.Integrity != Verified || b.ContentDigest != digest || b.BundleVersion != "sha256:"+digest || b.BundleSHA256() != "sha256:"+digest {
		t.Fatalf("got %+v, want verified %s", b, digest)
	}
	if b.ID != workflowID([]byte(digest)) || b.BaseID != b.ID {
		t.Fatalf("id %s", b.ID)
	}
	p, err := b.Protected()
	if err != nil || p.Name != "CANARY-NAME" || p.StepIntents[0] != "CANARY-INTENT" || p.RecordedParams[0] != (NamedValue{"note", "CANARY-VALUE"}) {
		t.Fatalf("protected %+v, %v", p, err)
	}
	m := loadT(t, dir, WithLevel(Metadata))
	if m.Integrity != ContentVerified || m.ID != b.ID || m.BundleVersion != "" {
		t.Fatalf("metadata level: %+v", m)
	}
}

// The omission rules apply only at their model positions and only for schema 2.
func TestOmissionPositions(t *testing.T) {
	t.Parallel()
	digestOf := func(wf string) string {
		top := new(pyjson.Doc)
		if err := parseObject(top, []byte(wf)); err != nil {
			t.Fatal(err)
		}
		digest, _ := contentDigest(top, top, pyjson.None, nil)
		return digest
	}
	same := [][2]string{
		// Step defaults are dropped.
		{`{"schema_version":2,"steps":[{"field_label":null,"modifiers":[],"risk_review_required":false}]}`, `{"schema_version":2,"steps":[{}]}`},
		// v1 migrates to 2 and gets the omissions.
		{`{"schema_version":1,"steps":[{"field_label":null}]}`, `{"steps":[{}]}`},
		{`{"schema_version":"2","interstitials":[]}`, `{"schema_version":2}`},
		// Effects, structural locators, predicates, program and subflow states.
		{`{"steps":[{"effects":[{"new_records":[],"identity_field":"id"}],"api_binding":{"effects":[{"identity_field":"id"}]}}]}`, `{"steps":[{"effects":[{}],"api_binding":{"effects":[{}]}}]}`},
		{`{"steps":[{"anchor":{"structural":{"frame_path":[]}},"wait_until":{"operands":[{"anchor":{"structural":{"frame_path":null}}}]}}]}`, `{"steps":[{"anchor":{"structural":{}},"wait_until":{"operands":[{"anchor":{"structural":{}}}]}}]}`},
		{`{"program":{"states":{"a":{"step":{"selection_region":null},"transitions":[{"guard":{"anchor":{"structural":{"frame_path":[]}}}}]}}},"subflows":{"s":{"states":{"b":{"step":{"drag_end_anchor":null}}}}}}`, `{"program":{"states":{"a":{"step":{},"transitions":[{"guard":{"anchor":{"structural":{}}}}]}}},"subflows":{"s":{"states":{"b":{"step":{}}}}}}`},
		{`{"interstitials":[{"dismiss_anchor":{"structural":{"frame_path":null}},"detect":{"anchor":{"structural":{"frame_path":[]}}}}]}`, `{"interstitials":[{"dismiss_anchor":{"structural":{}},"detect":{"anchor":{"structural":{}}}}]}`},
		{`{"program":{"states":{"a":{"decision":{"revalidation":[{"anchor":{"structural":{"frame_path":[]}}}]}}}}}`, `{"program":{"states":{"a":{"decision":{"revalidation":[{"anchor":{"structural":{}}}]}}}}}`},
		{`{"steps":[{"guard":{"predicate":{"anchor":{"structural":{"frame_path":null}}}},"drag_end_anchor":{"structural":{"frame_path":[]}}}]}`, `{"steps":[{"guard":{"predicate":{"anchor":{"structural":{}}}},"drag_end_anchor":{"structural":{}}}]}`},
		// The manifest key never enters the digest.
		{`{"manifest":{"x":1}}`, `{}`},
	}
	for _, c := range same {
		if digestOf(c[0]) != digestOf(c[1]) {
			t.Errorf("%s and %s should digest alike", c[0], c[1])
		}
	}
	differ := [][2]string{
		// Non-default values stay.
		{`{"steps":[{"field_label":"x"}]}`, `{"steps":[{}]}`},
		{`{"steps":[{"risk_review_required":0}]}`, `{"steps":[{}]}`},
		// Schema versions above 2 get no omissions.
		{`{"schema_version":3,"steps":[{"field_label":null}]}`, `{"schema_version":3,"steps":[{}]}`},
		// Not a Step position: the key stays.
		{`{"field_label":null}`, `{}`},
		{`{"data_sources":{"x":{"modifiers":[]}}}`, `{"data_sources":{"x":{}}}`},
		{`{"steps":[{"expect":[{"frame_path":null}]}]}`, `{"steps":[{"expect":[{}]}]}`},
		// -0.0 and 0.0 differ.
		{`{"steps":[{"timeout_s":-0.0}]}`, `{"steps":[{"timeout_s":0.0}]}`},
		// An integer literal in a float field is not normalized (raw procedure).
		{`{"steps":[{"timeout_s":10}]}`, `{"steps":[{"timeout_s":10.0}]}`},
	}
	for _, c := range differ {
		if digestOf(c[0]) == digestOf(c[1]) {
			t.Errorf("%s and %s should digest differently", c[0], c[1])
		}
	}
}

func TestPlainTamper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		want   ErrorKind
	}{
		{"workflow edited", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), "CANARY-INTENT", "CANARY-INTENX")
		}, KindContentDigestMismatch},
		{"float respelled", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), `"timeout_s":10.0`, `"timeout_s":10`)
		}, KindContentDigestMismatch},
		{"template byte flipped", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "templates/a.png"), []byte("png-A"), 0o644)
		}, KindAssetHashMismatch},
		{"asset missing", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "templates/identifiers/b.png"))
		}, KindAssetMissing},
		{"asset is a folder", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates/a.png")
			os.Remove(p)
			os.Mkdir(p, 0o755)
		}, KindAssetMissing},
		{"asset is a fifo", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates/a.png")
			os.Remove(p)
			if err := mkfifo(p); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, KindAssetMissing},
		{"asset is a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates/a.png")
			os.Rename(p, p+".real")
			os.Symlink("a.png.real", p)
		}, KindUnsafePath},
		{"asset folder is a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "templates/identifiers")
			os.Rename(p, p+".real")
			os.Symlink("identifiers.real", p)
		}, KindUnsafePath},
		{"templates is a symlink to /etc", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "templates"))
			os.Symlink("/etc", filepath.Join(dir, "templates"))
		}, KindUnsafePath},
		{"workflow.json is a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			os.Rename(p, filepath.Join(dir, "real.json"))
			os.Symlink("real.json", p)
		}, KindUnsafePath},
		{"workflow.json is a fifo", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			os.Remove(p)
			if err := mkfifo(p); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, KindNotABundle},
		{"workflow.json removed", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "workflow.json"))
		}, KindNotABundle},
		{"truncated workflow.json", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)/2], 0o644)
		}, KindInvalidJSON},
		{"array top level", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(`[{"schema_version":2}]`), 0o644)
		}, KindInvalidJSON},
		{"array where the steps object list belongs", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), `"params":{"note":"CANARY-VALUE"}`, `"params":["CANARY-VALUE"]`)
		}, KindInvalidJSON},
		{"manifest is an array", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			data, _ := os.ReadFile(p)
			i := strings.Index(string(data), `,"manifest":`)
			os.WriteFile(p, append(data[:i:i], `,"manifest":[]}`...), 0o644)
		}, KindInvalidJSON},
		{"leading BOM", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, append([]byte("\xef\xbb\xbf"), data...), 0o644)
		}, KindInvalidJSON},
		{"duplicate key", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), `"name":"CANARY-NAME"`, `"name":"CANARY-NAME","name":"CANARY-NAME"`)
		}, KindInvalidJSON},
		{"lone surrogate", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), `"CANARY-NAME"`, `"CANARY\ud800"`)
		}, KindInvalidJSON},
		{"invalid UTF-8", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json"), `"CANARY-NAME"`, "\"CANARY\xff\"")
		}, KindInvalidJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			defaultSynth().write(t, dir)
			tt.tamper(t, dir)
			mustKind(t, loadT(t, dir), tt.want)
		})
	}
}

// file_hashes keys that could escape are refused before any file is read.
func TestUnsafeKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"../x.png", "/etc/passwd", "templates//a.png", "templates\\a.png", "templates/", "/", "", "templates/../../x", "a/..", "t/\x00"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			s := defaultSynth()
			s.write(t, dir)
			// Rewrite the manifest's file_hashes with the unsafe key and a
			// digest that matches, so only the key check can fail.
			p := filepath.Join(dir, "workflow.json")
			data, _ := os.ReadFile(p)
			top := new(pyjson.Doc)
			parseObject(top, data)
			fhJSON := `{` + string(pyjson.AppendString(nil, key)) + `:"` + strings.Repeat("0", 64) + `"}`
			fh, _ := pyjson.Parse([]byte(fhJSON), flowJSON)
			d, _ := contentDigest(top, fh, fh.Root(), nil)
			i := strings.Index(string(data), `,"manifest":`)
			wf := string(data[:i]) + `,"manifest":{"content_digest":"` + d + `","file_hashes":` + fhJSON + `}}`
			os.WriteFile(p, []byte(wf), 0o644)
			mustKind(t, loadT(t, dir), KindUnsafePath)
		})
	}
}

func TestManifestPrecedence(t *testing.T) {
	t.Parallel()
	// Embedded manifest wins over a corrupt sidecar.
	dir := t.TempDir()
	defaultSynth().write(t, dir)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("\xef\xbb\xbf not json"), 0o644)
	b := loadT(t, dir)
	if b.Integrity != Verified || b.ManifestSource != "embedded" || b.CompilerVersion != "9.9.9" {
		t.Fatalf("%+v", b)
	}

	// Sidecar only: authoritative.
	dir = t.TempDir()
	top := new(pyjson.Doc)
	parseObject(top, []byte(baseWorkflow))
	d, _ := contentDigest(top, top, pyjson.None, nil)
	os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(baseWorkflow), 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"content_digest":"`+d+`","file_hashes":{}}`), 0o644)
	b = loadT(t, dir)
	if b.Integrity != Verified || b.ManifestSource != "sidecar" {
		t.Fatalf("%+v", b)
	}
	// A corrupt authoritative sidecar is invalid_json; a symlinked one unsafe_path.
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"content_digest":1}`), 0o644)
	mustKind(t, loadT(t, dir), KindInvalidJSON)
	os.Remove(filepath.Join(dir, "manifest.json"))
	os.WriteFile(filepath.Join(dir, "m2.json"), []byte(`{"content_digest":"`+d+`"}`), 0o644)
	os.Symlink("m2.json", filepath.Join(dir, "manifest.json"))
	mustKind(t, loadT(t, dir), KindUnsafePath)

	// No manifest, or an empty digest: legacy, never verified.
	os.Remove(filepath.Join(dir, "manifest.json"))
	b = loadT(t, dir)
	if b.Integrity != LegacyUnverified || b.ContentDigest != "" || b.BundleVersion != "" || b.Verified() || !b.Loaded() || b.Err != nil {
		t.Fatalf("legacy: %+v", b)
	}
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"content_digest":"","file_hashes":{}}`), 0o644)
	if b := loadT(t, dir); b.Integrity != LegacyUnverified || b.ManifestSource != "sidecar" {
		t.Fatalf("empty digest: %+v", b)
	}
}

func TestSealed(t *testing.T) {
	t.Parallel()
	newSealed := func(t *testing.T) (string, string) {
		dir := t.TempDir()
		s := defaultSynth()
		s.Sealed = testPass
		s.Extra = map[string][]byte{"notes.txt": []byte("n"), "notes/operator.txt": []byte("o")}
		return dir, s.write(t, dir)
	}
	t.Run("verifies", func(t *testing.T) {
		t.Parallel()
		dir, digest := newSealed(t)
		b := loadT(t, dir, WithKey(testPass))
		if b.Integrity != Verified || b.ContentDigest != digest || !b.Encrypted || !strings.HasPrefix(b.BundleVersion, "sha256:") || b.BundleVersion == "sha256:"+digest {
			t.Fatalf("%+v", b)
		}
		m := loadT(t, dir, WithKey(testPass), WithLevel(Metadata))
		if m.Integrity != ContentVerified || m.ID != b.ID || m.BundleVersion != b.BundleVersion {
			t.Fatalf("metadata: %+v", m)
		}
	})
	cases := []struct {
		name   string
		tamper func(t *testing.T, dir string)
		opts   []Option
		want   ErrorKind
	}{
		{"missing key", nil, []Option{WithoutKey()}, KindMissingKey},
		{"wrong key", nil, []Option{WithKey("not-" + testPass)}, KindDecryptFailed},
		{"workflow ciphertext flipped", func(t *testing.T, dir string) {
			flipCiphertext(t, filepath.Join(dir, "workflow.json.enc"))
		}, nil, KindDecryptFailed},
		{"template ciphertext flipped", func(t *testing.T, dir string) {
			flipCiphertext(t, filepath.Join(dir, "templates/a.png.enc"))
		}, nil, KindDecryptFailed},
		{"unlisted template fails to decrypt", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "templates/extra.png.enc"), []byte(`{"format":"openadapt-flow-enc"}`), 0o644)
		}, nil, KindDecryptFailed},
		{"template sealed as workflow (wrong AAD)", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "templates/a.png.enc"), sealBytes(t, []byte("png-a"), testPass, AADWorkflow, testKDFN), 0o644)
		}, nil, KindDecryptFailed},
		{"template replaced", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "templates/a.png.enc"), sealBytes(t, []byte("png-X"), testPass, AADTemplate, testKDFN), 0o644)
		}, nil, KindAssetHashMismatch},
		{"template ciphertext missing, plaintext present", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "templates/a.png.enc"))
			os.WriteFile(filepath.Join(dir, "templates/a.png"), []byte("png-a"), 0o644)
		}, nil, KindAssetMissing},
		{"kdf_n 2 GiB", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "workflow.json.enc"), `"kdf_n": 16`, `"kdf_n": 2147483648`)
		}, nil, KindKDFCostRejected},
		{"template kdf_n 2 GiB", func(t *testing.T, dir string) {
			replaceIn(t, filepath.Join(dir, "templates/a.png.enc"), `"kdf_n": 16`, `"kdf_n": 2147483648`)
		}, nil, KindKDFCostRejected},
		{"nonce too short", func(t *testing.T, dir string) {
			setField(t, filepath.Join(dir, "workflow.json.enc"), "nonce", "AAAA")
		}, nil, KindDecryptFailed},
		{"lenient base64", func(t *testing.T, dir string) {
			setField(t, filepath.Join(dir, "workflow.json.enc"), "salt", "AAAA AAAA")
		}, nil, KindDecryptFailed},
		{"container truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "workflow.json.enc")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)/2], 0o644)
		}, nil, KindDecryptFailed},
		{"symlink in notes", func(t *testing.T, dir string) {
			os.Symlink("/etc", filepath.Join(dir, "notes/etc"))
		}, nil, KindUnsafePath},
		{"symlink under templates", func(t *testing.T, dir string) {
			os.Symlink("a.png.enc", filepath.Join(dir, "templates/z.png.enc"))
		}, nil, KindUnsafePath},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, _ := newSealed(t)
			if tc.tamper != nil {
				tc.tamper(t, dir)
			}
			opts := tc.opts
			if opts == nil {
				opts = []Option{WithKey(testPass)}
			}
			b := loadT(t, dir, opts...)
			mustKind(t, b, tc.want)
			if !b.Encrypted {
				t.Fatal("encrypted flag lost")
			}
			if (b.BundleVersion == "") != (tc.want == KindUnsafePath) {
				t.Fatalf("bundle_version %q for %s", b.BundleVersion, tc.want)
			}
		})
	}
	// A metadata load never decrypts templates: a broken template still
	// gives content_verified.
	dir, _ := newSealed(t)
	flipCiphertext(t, filepath.Join(dir, "templates/a.png.enc"))
	if b := loadT(t, dir, WithKey(testPass), WithLevel(Metadata)); b.Integrity != ContentVerified {
		t.Fatalf("metadata load: %+v", b)
	}
}

// The passphrase defaults to OPENADAPT_BUNDLE_KEY; empty means unset.
func TestKeyFromEnv(t *testing.T) {
	dir := t.TempDir()
	s := defaultSynth()
	s.Sealed = testPass
	s.write(t, dir)
	t.Setenv(KeyEnv, testPass)
	if b := loadT(t, dir); b.Integrity != Verified {
		t.Fatalf("env key: %+v", b)
	}
	mustKind(t, loadT(t, dir, WithoutKey()), KindMissingKey)
	t.Setenv(KeyEnv, "")
	mustKind(t, loadT(t, dir), KindMissingKey)
}

func TestEdgeCases(t *testing.T) {
	t.Parallel()
	t.Run("both markers: the sealed one is read", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := defaultSynth()
		s.Sealed = testPass
		digest := s.write(t, dir)
		os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(`not even json`), 0o644)
		b := loadT(t, dir, WithKey(testPass))
		// Flow takes the plaintext branch of bundle_version when workflow.json
		// exists, whatever else is there.
		if b.Integrity != Verified || !b.Encrypted || b.BundleVersion != "sha256:"+digest {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("sealed legacy", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "workflow.json.enc"), sealBytes(t, []byte(`{"schema_version":1,"name":"x","steps":[{}]}`), testPass, AADWorkflow, testKDFN), 0o644)
		b := loadT(t, dir, WithKey(testPass))
		if b.Integrity != LegacyUnverified || b.SchemaVersion != 2 || b.StepCount != 1 || b.ContentDigest != "" || !strings.HasPrefix(b.BundleVersion, "sha256:") {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("schema 3 and a program", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		s := defaultSynth()
		s.Workflow = `{"schema_version":3,"steps":[{},{}],"program":{"entry":"a","states":{"a":{"kind":"action","step":{}},"b":{"kind":"terminal"}}},"subflows":{"s":{"states":{"c":{"kind":"action","step":{}}}}}}`
		s.write(t, dir)
		b := loadT(t, dir)
		if b.Integrity != Verified || b.SchemaVersion != 3 || b.StepCount != 2 || b.ActionStepCount != 2 {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("wrong field types", func(t *testing.T) {
		t.Parallel()
		for _, wf := range []string{`{"steps":{}}`, `{"name":1}`, `{"program":[]}`, `{"program":{},"subflows":[]}`, `{"param_specs":{"a":1}}`,
			`{"param_specs":{"a":{"type":1}}}`, `{"param_specs":{"a":{"required":"yes"}}}`, `{"param_specs":{"a":{"choices":[1]}}}`,
			`{"param_specs":{"a":{"example":1}}}`, `{"secret_params":{}}`, `{"secret_params":[1]}`, `{"params":{"a":1}}`,
			`{"manifest":{"content_digest":"x","file_hashes":[]}}`, `{"manifest":{"content_digest":"x","file_hashes":{"a":1}}}`} {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(wf), 0o644)
			b := loadT(t, dir)
			if b.ErrorKind != KindInvalidJSON {
				t.Errorf("%s: %s %v", wf, b.Integrity, b.Err)
			}
		}
	})
	t.Run("fs errors are sanitized", func(t *testing.T) {
		t.Parallel()
		// Only the errno is kept: no path, no placeholder.
		err := sanitize(&os.PathError{Op: "lstat", Path: "/secret/abs/path", Err: os.ErrPermission})
		if err.Error() != "permission denied" {
			t.Fatalf("%v", err)
		}
		err = sanitize(&os.LinkError{Op: "rename", Old: "/secret/a", New: "/secret/b", Err: os.ErrExist})
		if strings.Contains(err.Error(), "/secret") || strings.Contains(err.Error(), "rename") {
			t.Fatalf("%v", err)
		}
		if assetRef(2, "templates/a b.png") != "listed asset 2" || assetRef(2, "templates/a.png") != "listed asset 2 (templates/a.png)" {
			t.Fatal("assetRef")
		}
		_, err = Discover(filepath.Join(t.TempDir(), "missing"))
		if !errors.Is(err, ErrRoot) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "unusable bundle root: no such file or directory" {
			t.Fatalf("missing root: %v", err)
		}
		if KindOf(nil) != "" || KindOf(os.ErrNotExist) != "" || KindOf(fmt.Errorf("wrapped: %w", ErrAssetMissing)) != KindAssetMissing {
			t.Fatal("KindOf")
		}
	})
}

func TestDecryptContainerErrors(t *testing.T) {
	t.Parallel()
	good := sealBytes(t, []byte("hello"), testPass, AADCheckpoint, testKDFN)
	if got, err := DecryptContainer(good, testPass, AADCheckpoint); err != nil || string(got) != "hello" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := DecryptContainer(good, testPass, AADTemplate); !errors.Is(err, ErrDecryptFailed) {
		t.Fatalf("wrong AAD: %v", err)
	}
	if _, err := DecryptContainer(good, "", AADCheckpoint); !errors.Is(err, ErrMissingKey) {
		t.Fatalf("empty key: %v", err)
	}
	for _, c := range []struct{ from, to string }{
		{`"kdf_n": 16`, `"kdf_n": 3`}, {`"kdf_n": 16`, `"kdf_n": 524288`}, {`"kdf_n": 16`, `"kdf_n": 1`},
		{`"kdf_n": 16`, `"kdf_n": -16`}, {`"kdf_n": 16`, `"kdf_n": 99999999999999999999999`},
		{`"kdf_r": 8`, `"kdf_r": 0`}, {`"kdf_r": 8`, `"kdf_r": 33`}, {`"kdf_p": 1`, `"kdf_p": 17`},
		{`"kdf_n": 16`, `"kdf_n": 262144`}, // 128*2^18*8 = 256 MiB: within the cap ...
	} {
		_, err := parseContainer([]byte(strings.Replace(string(good), c.from, c.to, 1)))
		want := ErrKDFCostRejected
		if c.to == `"kdf_n": 262144` {
			want = nil
		}
		if !errors.Is(err, want) && !(want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", c.to, err, want)
		}
	}
	// ... but not with r = 16.
	if _, err := parseContainer([]byte(strings.NewReplacer(`"kdf_n": 16`, `"kdf_n": 262144`, `"kdf_r": 8`, `"kdf_r": 16`).Replace(string(good)))); !errors.Is(err, ErrKDFCostRejected) {
		t.Errorf("512 MiB accepted: %v", err)
	}
	for _, bad := range []string{`[]`, `{}`, `{"format":"other"}`, `{"format":"openadapt-flow-enc","kdf_n":1.5}`, ``, `{"format":"openadapt-flow-enc","salt":"","nonce":"AAAAAAAAAAAAAAAA","ciphertext":""}`} {
		if _, err := DecryptContainer([]byte(bad), testPass, AADWorkflow); !errors.Is(err, ErrDecryptFailed) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	defaultSynth().write(t, filepath.Join(root, "b-dup"))
	defaultSynth().write(t, filepath.Join(root, "a-first"))
	defaultSynth().write(t, filepath.Join(root, "c-dup"))
	os.MkdirAll(filepath.Join(root, "d-not-a-bundle/templates"), 0o755)
	os.WriteFile(filepath.Join(root, "e-file"), nil, 0o644)
	os.Mkdir(filepath.Join(root, "f-broken"), 0o755)
	os.WriteFile(filepath.Join(root, "f-broken/workflow.json"), []byte(`[]`), 0o644)
	os.Symlink("/etc", filepath.Join(root, "g-etc"))
	os.Symlink("/etc/hostname", filepath.Join(root, "h-file-link"))
	bs, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		dir, id   string
		integrity Integrity
		kind      ErrorKind
	}
	var got []row
	for _, b := range bs {
		got = append(got, row{filepath.Base(b.Dir), b.ID, b.Integrity, b.ErrorKind})
		assertNoLeak(t, b)
	}
	base := bs[0].BaseID
	want := []row{
		{"a-first", base, Verified, ""},
		{"b-dup", base + "_2", Verified, ""},
		{"c-dup", base + "_3", Verified, ""},
		{"f-broken", bs[3].BaseID, Failed, KindInvalidJSON},
		{"g-etc", bs[4].BaseID, Failed, KindUnsafePath},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("bundle %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if bs[0].Dir != root+string(filepath.Separator)+"a-first" {
		t.Errorf("dir %q", bs[0].Dir)
	}
	// Slug collisions: later bundles get slug(<slug>_<folder>).
	for i, w := range []string{"canary_name", "canary_name_b_dup", "canary_name_c_dup"} {
		p, _ := bs[i].Protected()
		if p.AgentSlug != w {
			t.Errorf("slug %d = %q, want %q", i, p.AgentSlug, w)
		}
	}
	// A root that is a bundle is the only bundle.
	one, err := Discover(bs[0].Dir)
	if err != nil || len(one) != 1 || one[0].ID != base {
		t.Fatalf("root bundle: %v %+v", err, one)
	}
	// Unusable roots are errors, not bundles.
	for _, r := range []string{filepath.Join(root, "missing"), filepath.Join(root, "e-file")} {
		if _, err := Discover(r); !errors.Is(err, ErrRoot) || strings.Contains(err.Error(), root) {
			t.Errorf("Discover(%s): %v", r, err)
		}
		if _, err := Load(r); !errors.Is(err, ErrRoot) {
			t.Errorf("Load(%s): %v", r, err)
		}
	}
	// A symlinked root is refused, not followed.
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(bs[0].Dir, link)
	if got, err := Discover(link); err != nil || len(got) != 1 || got[0].ErrorKind != KindUnsafePath {
		t.Fatalf("symlinked root: %v %+v", err, got)
	}
	// An empty root holds no bundle; Load reports not_a_bundle.
	empty := t.TempDir()
	if got, err := Discover(empty); err != nil || len(got) != 0 {
		t.Fatalf("empty root: %v %+v", err, got)
	}
	mustKind(t, loadT(t, empty), KindNotABundle)
}

func TestOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]Option{
		{WithKey("")}, {WithKey("a"), WithoutKey()}, {WithoutKey(), WithKey("a")},
		{WithLevel(Level(7))}, {WithLevel(Full), WithLevel(Metadata)}, {WithWorkers(0)},
	} {
		if _, err := Discover(t.TempDir(), opts...); !errors.Is(err, ErrOption) {
			t.Errorf("options accepted: %v", err)
		}
	}
}

func TestSlugify(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, agent, skill string }{
		{"İstanbul", "i_stanbul", "i-stanbul"},
		{"mockmed-triage", "mockmed_triage", "mockmed-triage"},
		{"", "workflow", "workflow"},
		{"—🩺—", "workflow", "workflow"},
		{"  Save Encounter: for each!  ", "save_encounter_for_each", "save-encounter-for-each"},
		{"\u212aelvin", "kelvin", "kelvin"},
	} {
		if a, s := slugify(c.in, '_'), slugify(c.in, '-'); a != c.agent || s != c.skill {
			t.Errorf("slugify(%q) = %q, %q; want %q, %q", c.in, a, s, c.agent, c.skill)
		}
	}
}

func TestDeclaredParams(t *testing.T) {
	t.Parallel()
	b := &Bundle{LegacyParams: []string{"b", "pw", "a"}, ParamSpecNames: []string{"a", "c", "pw"}, SecretParams: []string{"pw"}}
	got := strings.Join(b.DeclaredParams(), ",")
	if got != "b,a,c" {
		t.Errorf("DeclaredParams = %s", got)
	}
}

func replaceIn(t *testing.T, path, from, to string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), from) {
		t.Fatalf("%q not found in %s", from, filepath.Base(path))
	}
	os.WriteFile(path, []byte(strings.Replace(string(data), from, to, 1)), 0o644)
}

func setField(t *testing.T, path, field, val string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	lines := strings.Split(string(data), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, `  "`+field+`": `) {
			lines[i] = `  "` + field + `": "` + val + `",`
		}
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// flipCiphertext flips one bit inside the base64 ciphertext of a container.
func flipCiphertext(t *testing.T, path string) {
	t.Helper()
	data, _ := os.ReadFile(path)
	i := strings.Index(string(data), `"ciphertext": "`) + len(`"ciphertext": "`) + 2
	if data[i] == 'A' {
		data[i] = 'B'
	} else {
		data[i] = 'A'
	}
	os.WriteFile(path, data, 0o644)
}
