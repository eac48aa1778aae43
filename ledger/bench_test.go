package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkVerifyEmbedded verifies the embedded snapshot in process.
func BenchmarkVerifyEmbedded(b *testing.B) {
	v, _ := NewVerifier(DefaultTrust(), WithAt(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, Embedded()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyEmbeddedCold is what one `ledger verify` process does in
// process: build the verifier (trust root included) and verify the embedded
// snapshot once. The whole-process figure minus this is start-up.
func BenchmarkVerifyEmbeddedCold(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := NewVerifier(DefaultTrust(), WithAt(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Verify(ctx, Embedded()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyRegistry verifies generated evidence roots whose registries
// hold 2,500 / 5,000 / 10,000 entries (cost should grow linearly).
func BenchmarkVerifyRegistry(b *testing.B) {
	for _, n := range []int{2500, 5000, 10000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			o := genOptions(b)
			o.StaticTargets = nil
			o.Filler = (n - 22) / 2
			dir, r := generate(b, o)
			v, _ := NewVerifier(Trust{SignerRegistryIdentities: []string{r.SignerIdentity}}, WithAt(genAt))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := v.Verify(ctx, Path(dir))
				if err != nil || res.Integrity != IntegrityVerified {
					b.Fatal(err, res.Integrity)
				}
			}
		})
	}
}
