package bundle

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/scrypt"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// testKDFN keeps synthetic sealed containers cheap; vectors use Flow's 2^15.
const testKDFN = 16

// sealBytes writes a Flow container (docs/bundle.md, Sealed bundles) with
// scrypt cost n.
func sealBytes(t testing.TB, plain []byte, pass string, aad AAD, n int) []byte {
	t.Helper()
	salt, nonce := make([]byte, 16), make([]byte, 12)
	rand.Read(salt)
	rand.Read(nonce)
	key, err := scrypt.Key([]byte(pass), salt, n, 8, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(block)
	ct := gcm.Seal(nil, nonce, plain, []byte(aad))
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, "{\n  \"format\": \"openadapt-flow-enc\",\n  \"version\": 1,\n  \"cipher\": \"AES-256-GCM\",\n  \"kdf\": \"scrypt\",\n  \"kdf_n\": %d,\n  \"kdf_r\": 8,\n  \"kdf_p\": 1,\n  \"salt\": %q,\n  \"nonce\": %q,\n  \"aad\": %q,\n  \"ciphertext\": %q\n}",
		n, b64(salt), b64(nonce), string(aad), b64(ct))
}

// synth describes a synthetic bundle. Workflow is a JSON object without a
// manifest key; Files are bundle-relative plaintext files hashed into the
// manifest when Listed says so (default: every file under templates/).
type synth struct {
	Workflow string
	Files    map[string][]byte
	Extra    map[string][]byte // written but never listed
	Sealed   string            // passphrase: seal the bundle
	// SidecarOnly writes the manifest only to manifest.json (no embedded
	// manifest), so the sidecar is the one that counts.
	SidecarOnly bool
}

const baseWorkflow = `{"schema_version":2,"name":"CANARY-NAME","encrypted":false,"params":{"note":"CANARY-VALUE"},"param_specs":{},"secret_params":[],"steps":[{"id":"s0","intent":"CANARY-INTENT","action":"click","anchor":{"template":"templates/a.png","structural":{"frame_path":null}},"field_label":null,"modifiers":[],"risk_review_required":false,"timeout_s":10.0}],"interstitials":[],"program":null,"subflows":{},"data_sources":{}}`

func defaultSynth() synth {
	return synth{
		Workflow: baseWorkflow,
		Files: map[string][]byte{
			"templates/a.png":             []byte("png-a"),
			"templates/identifiers/b.png": []byte("png-b"),
		},
	}
}

// write creates the bundle under dir and returns its content digest.
func (s synth) write(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wf := s.Workflow
	if s.Sealed != "" {
		wf = strings.Replace(wf, `"encrypted":false`, `"encrypted":true`, 1)
	}
	names := make([]string, 0, len(s.Files))
	for n := range s.Files {
		names = append(names, n)
	}
	slices.Sort(names)
	var fh strings.Builder
	fh.WriteString("{")
	for i, n := range names {
		sum := sha256.Sum256(s.Files[n])
		if i > 0 {
			fh.WriteString(",")
		}
		fmt.Fprintf(&fh, "%q:%q", n, hex.EncodeToString(sum[:]))
	}
	fh.WriteString("}")
	top := new(pyjson.Doc)
	if err := parseObject(top, []byte(wf)); err != nil {
		t.Fatalf("synthetic workflow: %v", err)
	}
	files, _ := pyjson.Parse([]byte(fh.String()), flowJSON)
	digest, _ := contentDigest(top, files, files.Root(), nil)
	manifest := fmt.Sprintf(`{"schema_version":2,"content_digest":%q,"file_hashes":%s,"provenance":{"compiler_version":"9.9.9","certified":false},"encrypted":%v}`,
		digest, fh.String(), s.Sealed != "")
	full := strings.TrimSuffix(wf, "}") + `,"manifest":` + manifest + "}"
	if s.SidecarOnly {
		full = wf
	}
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("manifest.json", []byte(manifest))
	if s.Sealed == "" {
		write("workflow.json", []byte(full))
		for n, d := range s.Files {
			write(n, d)
		}
	} else {
		write("workflow.json.enc", sealBytes(t, []byte(full), s.Sealed, AADWorkflow, testKDFN))
		for n, d := range s.Files {
			write(n+".enc", sealBytes(t, d, s.Sealed, AADTemplate, testKDFN))
		}
	}
	for n, d := range s.Extra {
		write(n, d)
	}
	return digest
}
