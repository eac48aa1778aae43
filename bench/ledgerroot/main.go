// Command ledgerroot writes a generated OpenAdapt evidence root of a given
// registry size for the ledger benchmarks (bench/ledger.sh) and prints the
// signer-registry identity to pin with --signer-registry-identity.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

func main() {
	entries := flag.Int("entries", 10000, "registry entries (approximate, even)")
	out := flag.String("out", "", "output directory")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "usage: ledgerroot -entries N -out DIR")
		os.Exit(2)
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	o := lg.Options{Now: now, Workflows: []lg.WorkflowSpec{
		{BundleSHA256: "sha256:1111111111111111111111111111111111111111111111111111111111111111", BundleVersion: "1.0.0", Issued: now.Add(-240 * time.Hour)},
		{BundleSHA256: "sha256:2222222222222222222222222222222222222222222222222222222222222222", BundleVersion: "2.0.0", Issued: now.Add(-120 * time.Hour)},
	}}
	// 4 receipt entries + 7 release pairs + 2 workflow pairs = 22.
	if f := (*entries - 22) / 2; f > 0 {
		o.Filler = f
	}
	r := lg.Generate(o)
	if err := r.Write(*out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(r.SignerIdentity)
}
