package bundle_test

import (
	"errors"
	"fmt"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

func ExampleLoad() {
	b, err := bundle.Load("../testdata/flow/plain/mockmed-triage-v3")
	if err != nil {
		fmt.Println("failed:", b.ErrorKind)
		return
	}
	fmt.Println(b.ID, b.Integrity, b.StepCount)
	fmt.Println(b.BundleSHA256())
	for _, p := range b.Params {
		fmt.Println(p.Name, p.Type, p.Required)
	}
	// Output:
	// workflow_70323b828fe8286e021894bf verified 6
	// sha256:b754c0af6c0b7d0a2b3f1015fe30cfc759c7e198a12b8afaaabe5ccf8be2c99e
	// note string true
}

func ExampleDiscover() {
	// Without a key the sealed bundles fail with missing_key under their
	// keyless ids; WithKey (or OPENADAPT_BUNDLE_KEY) opens them.
	bs, err := bundle.Discover("../testdata/flow/tampered", bundle.WithoutKey())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range bs {
		fmt.Println(b.ID, b.Integrity, b.ErrorKind, errors.Is(b.Err, bundle.ErrBundle))
	}
	// Output:
	// workflow_3bd932e2c8c6cb31b8050cae failed asset_missing true
	// workflow_a966e495b86f5c0a25e9c64d failed missing_key true
	// workflow_edb9a4e02510fac5d46496a5 failed missing_key true
	// workflow_7bcd42691c4fe69a620340f5 failed content_digest_mismatch true
	// workflow_0ac932a7a89bcf7b4d62bd34 verified  false
	// workflow_3bd932e2c8c6cb31b8050cae_2 failed asset_hash_mismatch true
	// workflow_c7beedbe70da2f5551096760 failed content_digest_mismatch true
}

func ExampleCanonicalJSON() {
	out, _ := bundle.CanonicalJSON([]byte(`{"b": 0.00001, "a": [1E5, -0, "<&>\u00e9"]}`))
	fmt.Println(string(out))
	// Output: {"a":[100000.0,0,"<&>é"],"b":1e-05}
}
