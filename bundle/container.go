package bundle

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"math/bits"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"

	"golang.org/x/crypto/scrypt"
)

// AAD is the additional authenticated data a sealed container is opened
// with. Flow binds every file kind to its own domain constant and ignores the
// container's informational "aad" field (docs/bundle.md, Sealed bundles).
type AAD string

// The AAD constants, one per file kind.
const (
	AADWorkflow   AAD = "openadapt-flow/bundle"     // workflow.json.enc
	AADTemplate   AAD = "openadapt-flow/template"   // templates/**/<name>.enc
	AADCheckpoint AAD = "openadapt-flow/checkpoint" // durable run artifacts *.json.enc
)

const containerFormat = "openadapt-flow-enc"

// Scrypt cost cap (Flow sets none; every container it writes costs 32 MiB):
// N a power of two with 2 <= N <= 2^18,
// 1 <= r <= 32, 1 <= p <= 16 and 128*N*r <= 256 MiB.
const (
	maxKDFN      = 1 << 18
	maxKDFR      = 32
	maxKDFP      = 16
	maxKDFMemory = 256 << 20
)

// container is a parsed sealed container, ready to derive and open.
type container struct {
	n, r, p    int
	salt       []byte
	nonce      []byte
	ciphertext []byte
}

// parseContainer parses and checks a container without deriving any key.
// A malformed container gives [ErrDecryptFailed]; scrypt parameters outside
// the cap give [ErrKDFCostRejected].
func parseContainer(data []byte) (*container, error) {
	d := docPool.Get().(*pyjson.Doc)
	defer docPool.Put(d)
	if err := parseObject(d, data); err != nil {
		return nil, &Error{Kind: KindDecryptFailed, Detail: "malformed container", cause: err}
	}
	top := d.Root()
	// Only "format" is checked; version, cipher, kdf and aad are ignored, as in Flow.
	if !d.StrIs(d.Get(top, "format"), containerFormat) {
		return nil, newErr(KindDecryptFailed, "malformed container: unknown format")
	}
	c := &container{}
	for _, kp := range []struct {
		key string
		dst *int
		def int
	}{{"kdf_n", &c.n, 32768}, {"kdf_r", &c.r, 8}, {"kdf_p", &c.p, 1}} {
		v := d.Get(top, kp.key)
		if v == pyjson.None {
			*kp.dst = kp.def
			continue
		}
		if !d.IsInt(v) {
			return nil, newErr(KindDecryptFailed, "malformed container: %s is not an integer", kp.key)
		}
		*kp.dst = smallInt(string(d.Bytes(v)))
	}
	b64 := base64.StdEncoding.Strict()
	for _, f := range []struct {
		key string
		dst *[]byte
	}{{"salt", &c.salt}, {"nonce", &c.nonce}, {"ciphertext", &c.ciphertext}} {
		v := d.Get(top, f.key)
		if d.Kind(v) != pyjson.String {
			return nil, newErr(KindDecryptFailed, "malformed container: %s missing", f.key)
		}
		b, err := b64.AppendDecode(nil, d.Bytes(v))
		if err != nil {
			return nil, newErr(KindDecryptFailed, "malformed container: %s is not strict base64", f.key)
		}
		*f.dst = b
	}
	// Go's GCM Open panics on a nonce of any other length; check before deriving.
	if len(c.nonce) != 12 {
		return nil, newErr(KindDecryptFailed, "malformed container: nonce is not 12 bytes")
	}
	if len(c.ciphertext) < 16 {
		return nil, newErr(KindDecryptFailed, "malformed container: ciphertext shorter than the tag")
	}
	if !kdfWithinCap(c.n, c.r, c.p) {
		return nil, newErr(KindKDFCostRejected, "scrypt parameters outside the cap")
	}
	return c, nil
}

// smallInt converts an integer token to int, saturating to -1 for anything
// negative and to a value above every cap for anything huge ("-0" is 0).
func smallInt(tok string) int {
	if tok == "-0" {
		return 0
	}
	if len(tok) > 0 && tok[0] == '-' {
		return -1
	}
	if len(tok) > 12 {
		return 1 << 40
	}
	n := 0
	for i := 0; i < len(tok); i++ {
		n = n*10 + int(tok[i]-'0')
	}
	return n
}

func kdfWithinCap(n, r, p int) bool {
	if n < 2 || n > maxKDFN || bits.OnesCount(uint(n)) != 1 {
		return false
	}
	if r < 1 || r > maxKDFR || p < 1 || p > maxKDFP {
		return false
	}
	return 128*n*r <= maxKDFMemory
}

// open derives the key and opens the ciphertext with aad.
func (c *container) open(passphrase []byte, aad AAD) ([]byte, error) {
	key, err := scrypt.Key(passphrase, c.salt, c.n, c.r, c.p, 32)
	if err != nil {
		return nil, newErr(KindDecryptFailed, "key derivation failed")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, newErr(KindDecryptFailed, "cipher setup failed")
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, newErr(KindDecryptFailed, "cipher setup failed")
	}
	plain, err := gcm.Open(nil, c.nonce, c.ciphertext, []byte(aad))
	if err != nil {
		// Wrong passphrase and tampered ciphertext are indistinguishable on purpose.
		return nil, newErr(KindDecryptFailed, "wrong key or tampered ciphertext")
	}
	return plain, nil
}

// DecryptContainer opens one Flow sealed container (docs/bundle.md, Sealed
// bundles) with
// passphrase and the domain constant aad for the file's kind. It returns an
// error wrapping [ErrDecryptFailed] for a malformed container, a wrong
// passphrase or a modified ciphertext (indistinguishable), [ErrKDFCostRejected]
// when the container asks for scrypt parameters outside the cap (checked
// before any derivation), and [ErrMissingKey] for an empty passphrase.
func DecryptContainer(data []byte, passphrase string, aad AAD) ([]byte, error) {
	if passphrase == "" {
		return nil, newErr(KindMissingKey, "no passphrase")
	}
	c, err := parseContainer(data)
	if err != nil {
		return nil, err
	}
	return c.open([]byte(passphrase), aad)
}
