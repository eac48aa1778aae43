package cmd

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// signBlob writes a Sigstore bundle (v0.3, message signature, public-key
// hint, no transparency log) signing data with key, as `cosign sign-blob
// --key … --bundle …` does offline.
func signBlob(t *testing.T, key *ecdsa.PrivateKey, data []byte, path string) {
	t.Helper()
	digest := sha256.Sum256(data)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"mediaType":            "application/vnd.dev.sigstore.bundle.v0.3+json",
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": "test-key"}},
		"messageSignature": map[string]any{
			"messageDigest": map[string]any{"algorithm": "SHA2_256", "digest": base64.StdEncoding.EncodeToString(digest[:])},
			"signature":     base64.StdEncoding.EncodeToString(sig),
		},
	}
	out, _ := json.Marshal(doc)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writePubKey(t *testing.T, key *ecdsa.PrivateKey, path string) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

func packDemo(t *testing.T, dir, name string) string {
	t.Helper()
	src := filepath.Join(dir, "demo")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: demo\ndescription: d\n---\n\n# "+name+"\n"), 0o644)
	out := filepath.Join(dir, name)
	if _, err := skill.PackFile(src, out, skill.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSkillVerifySignature(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	archive := packDemo(t, dir, "demo.skill")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	data, _ := os.ReadFile(archive)
	sigPath := archive + ".sigstore.json"
	signBlob(t, key, data, sigPath)
	keyPath := filepath.Join(dir, "key.pub")
	writePubKey(t, key, keyPath)

	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"skill", "verify"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	// sign → verify.
	code, out, errs := run(archive, "--bundle", sigPath, "--key", keyPath, "--insecure-ignore-tlog")
	if code != 0 || !strings.Contains(out, "ok signature key test-key\n") || errs != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// The JSON document carries the signature result.
	code, out, _ = run(archive, "--json", "--bundle", sigPath, "--key", keyPath, "--insecure-ignore-tlog")
	if code != 0 || !strings.Contains(out, `"verified": true`) || !strings.Contains(out, `"mediaType": "application/vnd.openadapt-agent.skill-verification+json;version=1"`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// The signature of another archive does not verify: exit 1.
	other := packDemo(t, t.TempDir(), "other.skill")
	code, _, errs = run(other, "--bundle", sigPath, "--key", keyPath, "--insecure-ignore-tlog")
	if code != 1 || !strings.Contains(errs, "skill verify: signature:") {
		t.Fatalf("wrong artifact: exit %d, stderr %s", code, errs)
	}
	// Another key: exit 1.
	key2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key2Path := filepath.Join(dir, "key2.pub")
	writePubKey(t, key2, key2Path)
	if code, _, _ = run(archive, "--bundle", sigPath, "--key", key2Path, "--insecure-ignore-tlog"); code != 1 {
		t.Fatalf("wrong key: exit %d", code)
	}
	// --bundle needs --key or --trusted-root; flags without --bundle are
	// usage errors too (exit 2), exactly as for ledger verify.
	if code, _, errs = run(archive, "--bundle", sigPath); code != 2 {
		t.Fatalf("no key: exit %d %s", code, errs)
	}
	if code, _, _ = run(archive, "--key", keyPath); code != 2 {
		t.Fatalf("--key without --bundle: exit %d", code)
	}
	// Without the tlog opt-out the key bundle is refused.
	if code, _, errs = run(archive, "--bundle", sigPath, "--key", keyPath); code == 0 {
		t.Fatalf("no tlog accepted: %s", errs)
	}
}

// skill install --global of a signed archive: the signature is checked with
// the same flags as skill verify before anything is written.
func TestSkillInstallSignature(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	dir := t.TempDir()
	archive := packDemo(t, dir, "demo.skill")
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	data, _ := os.ReadFile(archive)
	sigPath := archive + ".sigstore.json"
	signBlob(t, key, data, sigPath)
	keyPath := filepath.Join(dir, "key.pub")
	writePubKey(t, key, keyPath)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	otherPath := filepath.Join(dir, "other.pub")
	writePubKey(t, other, otherPath)

	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"skill", "install", "--global", "--agent", "claude-code"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, _, errs := run(archive, "--bundle", sigPath, "--key", otherPath, "--insecure-ignore-tlog")
	if code != 1 || !strings.Contains(errs, "skill install: signature:") {
		t.Fatalf("wrong key: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(home, ".agents", "skills", "demo")); err == nil {
		t.Fatal("an install whose signature failed wrote the skill")
	}
	code, out, errs := run(archive, "--bundle", sigPath, "--key", keyPath, "--insecure-ignore-tlog")
	if code != 0 || !strings.Contains(out, "copy "+filepath.Join(home, ".agents", "skills", "demo")) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "protected workflow data") {
		t.Errorf("no data-boundary warning: %s", errs)
	}
}

// Progress appears on stderr only when it is a terminal and the tree is
// large (more than 1000 files here).
func TestSkillPackProgress(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "demo")
	os.MkdirAll(filepath.Join(src, "many"), 0o755)
	os.WriteFile(filepath.Join(src, "SKILL.md"), []byte("---\nname: demo\ndescription: d\n---\n"), 0o644)
	for i := range 1001 {
		os.WriteFile(filepath.Join(src, "many", strings.Repeat("f", 1)+string(rune('a'+i%26))+itoa(i)), []byte("x"), 0o644)
	}
	for _, tty := range []bool{true, false} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"skill", "pack", src, "-o", filepath.Join(t.TempDir(), "d.skill")},
			&IO{In: bytes.NewReader(nil), Out: &out, Err: &errb, ErrTTY: tty})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		got := errb.String()
		if tty != strings.Contains(got, "\rpacking: 1/1002 files") {
			t.Errorf("tty=%v: stderr %q", tty, got)
		}
		if tty && !strings.Contains(got, "\rpacking: 1002/1002 files, 0/0 MiB\n") {
			t.Errorf("progress line not finished with a newline: %q", got)
		}
		if strings.Contains(out.String(), "packing") {
			t.Error("progress on stdout")
		}
	}
}

func itoa(i int) string { return fmt.Sprint(i) }
