// Command genbundles writes N synthetic plaintext Flow bundles for the
// `bundle verify` benchmark (bench/bundle-verify.sh). Each bundle has a
// schema-2 workflow.json with an embedded manifest whose content digest is
// computed with [bundle.CanonicalJSON], plus T template files of S bytes
// (pseudo-random, deterministic per seed). The workflow holds no field that
// the schema-2 omissions would drop, so the canonical form of
// {"files": FH, "workflow": W} is exactly what Flow hashes.
//
// With -copy DIR it writes N copies of the bundle folder DIR instead (every
// regular file and folder, modes kept; a link or special file refuses), so a
// set of 1,000 and one of 10,000 bundles have exactly the same entries per
// bundle and the cost per bundle can be read as a slope (BENCHMARKS.md,
// area serve at scale).
//
// Usage:
//
//	go run ./bench/genbundles -out DIR [-n 1000] [-templates 10] [-size 20480]
//	go run ./bench/genbundles -out DIR -n 10000 -copy testdata/flow/plain/floats-linear
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

func main() {
	out := flag.String("out", "", "output folder (must not exist)")
	n := flag.Int("n", 1000, "number of bundles")
	templates := flag.Int("templates", 10, "templates per bundle")
	size := flag.Int("size", 20*1024, "bytes per template")
	seed := flag.Uint64("seed", 1, "random seed")
	copyDir := flag.String("copy", "", "write N copies of this bundle folder instead of synthetic bundles")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "genbundles: -out is required")
		os.Exit(2)
	}
	if err := os.Mkdir(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "genbundles:", err)
		os.Exit(1)
	}
	if *copyDir != "" {
		for i := range *n {
			if err := copyTree(*copyDir, filepath.Join(*out, fmt.Sprintf("bundle-%05d", i))); err != nil {
				fmt.Fprintln(os.Stderr, "genbundles:", err)
				os.Exit(1)
			}
		}
		return
	}
	rng := rand.New(rand.NewPCG(*seed, 42))
	buf := make([]byte, *size)
	for i := range *n {
		if err := writeBundle(filepath.Join(*out, fmt.Sprintf("bundle-%05d", i)), i, *templates, buf, rng); err != nil {
			fmt.Fprintln(os.Stderr, "genbundles:", err)
			os.Exit(1)
		}
	}
}

func writeBundle(dir string, i, templates int, buf []byte, rng *rand.Rand) error {
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		return err
	}
	var files, steps []string
	for t := range templates {
		for j := 0; j < len(buf); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8 && j+k < len(buf); k++ {
				buf[j+k] = byte(v >> (8 * k))
			}
		}
		rel := fmt.Sprintf("templates/step_%03d.png", t)
		if err := os.WriteFile(filepath.Join(dir, rel), buf, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(buf)
		files = append(files, fmt.Sprintf("%q:%q", rel, hex.EncodeToString(sum[:])))
		steps = append(steps, fmt.Sprintf(`{"id":"step_%03d","intent":"click target %d","action":"click","anchor":{"template":%q,"structural":{"role":"button","frame_path":["main"]}},"timeout_s":%v,"risk":"reversible","expect":[{"kind":"visible","template":%q}]}`,
			t, t, rel, 10.0+float64(t)/8, rel))
	}
	fh := "{" + strings.Join(files, ",") + "}"
	wf := fmt.Sprintf(`{"schema_version":2,"name":"Synthetic benchmark workflow %d","recording_id":"rec-%d","contains_phi":false,"phi_scrubbed":true,"encrypted":false,"created_at":"2026-01-01T00:00:00Z","viewport":[1280,800],"params":{"note":"example"},"param_specs":{"note":{"name":"note","type":"string","example":"example","required":true,"choices":[]}},"secret_params":[],"steps":[%s],"program":null,"subflows":{},"data_sources":{}}`,
		i, i, strings.Join(steps, ","))
	canon, err := bundle.CanonicalJSON([]byte(`{"files":` + fh + `,"workflow":` + wf + `}`))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(canon)
	manifest := fmt.Sprintf(`{"schema_version":2,"content_digest":%q,"file_hashes":%s,"provenance":{"compiler_version":"synthetic"},"encrypted":false}`, hex.EncodeToString(sum[:]), fh)
	full := strings.TrimSuffix(wf, "}") + `,"manifest":` + manifest + "}"
	if err := os.WriteFile(filepath.Join(dir, "workflow.json"), []byte(full), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644)
}

// copyTree copies the folder src to dst (which must not exist): folders and
// regular files only, permission bits kept.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Mkdir(target, fi.Mode().Perm())
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, fi.Mode().Perm())
		}
		return fmt.Errorf("%s: not a folder or regular file", p)
	})
}
