// Package sealtest seals plaintext Flow bundles for tests, as `openadapt-flow
// seal` lays them out (docs/bundle.md, Sealed bundles), with a cheap scrypt
// cost so that tests under the race detector stay fast. Test support only:
// never linked into the binary.
package sealtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"golang.org/x/crypto/scrypt"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// N is the scrypt cost of sealed test containers (Flow's own is 2^15).
const N = 16

// Container returns a Flow container of plain under pass and aad.
func Container(t testing.TB, plain []byte, pass string, aad bundle.AAD) []byte {
	t.Helper()
	salt, nonce := make([]byte, 16), make([]byte, 12)
	rand.Read(salt)
	rand.Read(nonce)
	key, err := scrypt.Key([]byte(pass), salt, N, 8, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Appendf(nil, `{"format":"openadapt-flow-enc","version":1,"cipher":"AES-256-GCM","kdf":"scrypt","kdf_n":%d,"kdf_r":8,"kdf_p":1,"salt":%q,"nonce":%q,"aad":%q,"ciphertext":%q}`,
		N, b64(salt), b64(nonce), string(aad), b64(gcm.Seal(nil, nonce, plain, []byte(aad))))
}

// Seal writes the sealed form of the plaintext bundle src to dst (which
// must not exist): workflow.json becomes workflow.json.enc, every file under
// templates/ becomes <name>.enc, everything else is copied verbatim.
func Seal(t testing.TB, src, dst, pass string) {
	t.Helper()
	testutil.CopyTree(t, src, dst, func(rel string, data []byte, _ fs.FileMode) (string, []byte, fs.FileMode) {
		switch {
		case rel == "workflow.json":
			return rel + ".enc", Container(t, data, pass, bundle.AADWorkflow), 0o644
		case strings.HasPrefix(rel, "templates/"):
			return rel + ".enc", Container(t, data, pass, bundle.AADTemplate), 0o644
		}
		return rel, data, 0o644
	})
}
