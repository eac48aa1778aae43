package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/signing"
)

// releaseSignCmd is the testscript command `release-sign DIR KEY`: it
// writes DIR/checksums.txt over every other regular file in DIR (sorted, in
// GoReleaser's "<sha256>  <name>" form), signs it with a fresh ECDSA P-256
// key into DIR/checksums.txt.sigstore.json, and writes the public key to
// KEY, which should lie outside DIR (a verifier gets it out of band).
func releaseSignCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: release-sign DIR KEY")
	}
	dir := ts.MkAbs(args[0])
	ents, err := os.ReadDir(dir)
	ts.Check(err)
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), "checksums.txt") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	var sums strings.Builder
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		ts.Check(err)
		d := sha256.Sum256(b)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(d[:]), n)
	}
	bj, pub, err := signing.SignWithKey([]byte(sums.String()))
	ts.Check(err)
	ts.Check(os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(sums.String()), 0o644))
	ts.Check(os.WriteFile(filepath.Join(dir, "checksums.txt.sigstore.json"), bj, 0o644))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), pub, 0o644))
}
