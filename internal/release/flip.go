package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/verify"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// flipRelease changes one byte at a time and requires release verification
// to refuse every change: every byte of checksums.txt, every byte of the
// signature and digest values in its bundle, and in every artifact the
// first and last byte and bytes spread across it (a digest covers each byte
// alike, so a sample shows the file is covered; the unit tests flip every
// byte of small files). Each file is restored before the next.
func flipRelease(dist, key string, out io.Writer) error {
	ctx := context.Background()
	sums := filepath.Join(dist, "checksums.txt")
	bundlePath := sums + ".sigstore.json"
	o := verify.Options{Sigstore: ledger.SigstoreOptions{BundlePath: bundlePath, KeyPath: key, InsecureIgnoreTlog: true}}
	if _, err := verify.Verify(ctx, sums, o); err != nil {
		return fmt.Errorf("the unchanged release does not verify: %w", err)
	}
	data, err := os.ReadFile(sums)
	if err != nil {
		return err
	}
	entries, err := verify.ParseChecksums(data)
	if err != nil {
		return err
	}
	// refused flips byte i of p (xor mask) and checks that verification
	// fails with an error wrapping want.
	refused := func(p string, orig []byte, positions []int, masks []byte, want error) (int, error) {
		n := 0
		for _, i := range positions {
			for _, m := range masks {
				b := bytes.Clone(orig)
				b[i] ^= m
				if err := os.WriteFile(p, b, 0o644); err != nil {
					return n, err
				}
				_, err := verify.Verify(ctx, sums, o)
				n++
				if err == nil || !errors.Is(err, want) {
					os.WriteFile(p, orig, 0o644)
					return n, fmt.Errorf("%s byte %d ^%#x: want a refusal (%v), got %v", filepath.Base(p), i, m, want, err)
				}
			}
		}
		return n, os.WriteFile(p, orig, 0o644)
	}
	all := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	n, err := refused(sums, data, all(len(data)), []byte{0x01, 0x20}, verify.ErrSignature)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ok checksums.txt: %d one-byte changes refused (every byte)\n", n)

	bj, err := os.ReadFile(bundlePath)
	if err != nil {
		return err
	}
	var positions []int
	for _, key := range []string{`"signature":`, `"digest":`} {
		start, end, ok := jsonStringValue(bj, key)
		if !ok {
			return fmt.Errorf("no %s string in the bundle", key)
		}
		for i := start; i < end; i++ {
			positions = append(positions, i)
		}
	}
	n, err = refused(bundlePath, bj, positions, []byte{0x01, 0x02, 0x20}, verify.ErrSignature)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ok %s: %d one-byte changes in its signature and digest refused (every byte)\n", filepath.Base(bundlePath), n)

	for _, e := range entries {
		p := filepath.Join(dist, e.Name)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var pos []int
		for k := 0; k < 8; k++ {
			pos = append(pos, k*(len(b)-1)/7)
		}
		n, err := refused(p, b, pos, []byte{0x01}, verify.ErrDigestMismatch)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ok %s: %d one-byte changes refused\n", e.Name, n)
	}
	if _, err := verify.Verify(ctx, sums, o); err != nil {
		return fmt.Errorf("the restored release does not verify: %w", err)
	}
	return nil
}

// jsonStringValue finds the first string value after key in a JSON text
// and returns the range of its contents.
func jsonStringValue(b []byte, key string) (start, end int, ok bool) {
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return 0, 0, false
	}
	q := bytes.IndexByte(b[i+len(key):], '"')
	if q < 0 {
		return 0, 0, false
	}
	start = i + len(key) + q + 1
	e := bytes.IndexByte(b[start:], '"')
	if e < 0 {
		return 0, 0, false
	}
	return start, start + e, true
}
