package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/verify"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

func TestSignFile(t *testing.T) {
	t.Setenv("SIGSTORE_ID_TOKEN", "")
	dist := t.TempDir()
	writeFile(t, filepath.Join(dist, "a.tar.gz"), []byte("archive"))
	sums := writeFile(t, filepath.Join(dist, "checksums.txt"),
		[]byte("b4bf4dfa9b7cff5b4b2ad8d8fd0ee5e0e4b5d1e3b6b5a4f7a3c2c9c5a3fd1d1b  a.tar.gz\n"))
	bundle := filepath.Join(dist, "checksums.txt.sigstore.json")
	for name, tc := range map[string]struct {
		pub     string
		keyless bool
		want    string
	}{
		"key inside the release": {pub: filepath.Join(dist, "release.pub"), want: "outside the release folder"},
		"neither":                {want: "exactly one of"},
		"both":                   {pub: filepath.Join(t.TempDir(), "k.pub"), keyless: true, want: "exactly one of"},
		"keyless without token":  {keyless: true, want: "OIDC identity token"},
	} {
		err := signFile(sums, bundle, tc.pub, tc.keyless)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want an error containing %q, got %v", name, tc.want, err)
		}
		if _, err := os.Stat(bundle); err == nil {
			t.Fatalf("%s: a bundle was written", name)
		}
	}
	pub := filepath.Join(t.TempDir(), "release.pub")
	if err := signFile(sums, bundle, pub, false); err != nil {
		t.Fatal(err)
	}
	// The signature verifies with the key written outside the folder (the
	// artifact's digest is made up here, so only the signature is asked).
	_, err := verify.Verify(context.Background(), sums, verify.Options{Sigstore: ledger.SigstoreOptions{BundlePath: bundle, KeyPath: pub, InsecureIgnoreTlog: true}})
	if err == nil || strings.Contains(err.Error(), "signature") {
		t.Fatalf("want the signature to verify and the made-up digest to be refused, got %v", err)
	}
}
