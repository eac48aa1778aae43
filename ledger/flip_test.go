package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// TestRandomByteFlips flips one random bit in one random file of a
// generated evidence root (registry, signer registry, receipts, objects,
// bundles, ledgers, projections) and verifies the whole root: it must never
// panic, and every flip must be detected (an input error for a top-level
// document, otherwise a result that is not fully verified and active).
func TestRandomByteFlips(t *testing.T) {
	o := genOptions(t)
	base, r := generate(t, o)
	var files []string
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(base, p)
			files = append(files, rel)
		}
		return nil
	})
	sort.Strings(files)
	rng := rand.New(rand.NewPCG(1, 2))
	n := 150
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		rel := files[rng.IntN(len(files))]
		dir := t.TempDir()
		for _, f := range files {
			b, _ := os.ReadFile(filepath.Join(base, f))
			if f == rel {
				pos := rng.IntN(len(b))
				b[pos] ^= 1 << rng.IntN(8)
			}
			_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
			_ = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("flip in %s: panic: %v", rel, p)
				}
			}()
			v, _ := NewVerifier(Trust{SignerRegistryIdentities: []string{r.SignerIdentity}}, WithAt(genAt))
			res, err := v.Verify(context.Background(), Path(dir))
			if err != nil {
				if !errors.Is(err, ErrInput) {
					t.Fatalf("flip in %s: unexpected error %v", rel, err)
				}
				return
			}
			allActive := res.Product != nil && res.Product.Verdict == "production"
			for _, w := range res.WorkflowAdmissions {
				allActive = allActive && w.Verdict == VerdictActive
			}
			if res.Integrity == IntegrityVerified && allActive {
				t.Errorf("flip in %s went undetected", rel)
			}
		}()
	}
}
