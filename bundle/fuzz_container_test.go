package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzContainer: the sealed-container parser never panics, classifies every
// failure as decrypt_failed or kdf_cost_rejected, and only accepts
// containers within the scrypt cap with a 12-byte nonce and a full tag.
// Cheap accepted containers are opened too (never panics; wrong AAD fails).
func FuzzContainer(f *testing.F) {
	f.Add(sealBytes(f, []byte("hello"), testPass, AADTemplate, testKDFN))
	f.Add([]byte(`{"format":"openadapt-flow-enc","kdf_n":2147483648,"salt":"","nonce":"AAAAAAAAAAAAAAAA","ciphertext":"AAAAAAAAAAAAAAAAAAAAAA=="}`))
	f.Add([]byte(`{"format":"openadapt-flow-enc"}`))
	if data, err := os.ReadFile(filepath.Join(vectorsDir, "sealed/mockmed-triage-v3/templates/step_000.png.enc")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseContainer(data)
		if err != nil {
			if !errors.Is(err, ErrDecryptFailed) && !errors.Is(err, ErrKDFCostRejected) {
				t.Fatalf("unexpected error class %v", err)
			}
			return
		}
		if len(c.nonce) != 12 || len(c.ciphertext) < 16 || !kdfWithinCap(c.n, c.r, c.p) {
			t.Fatalf("accepted %+v", c)
		}
		if c.n*c.r*c.p > 1<<12 {
			return // keep fuzzing fast; expensive derivations are covered elsewhere
		}
		if _, err := c.open([]byte(testPass), AADCheckpoint); err != nil && !errors.Is(err, ErrDecryptFailed) {
			t.Fatalf("open: %v", err)
		}
	})
}
