package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/module"

	"github.com/OpenAdaptAI/openadapt-agent/internal/release/verify"
)

// targets are the six platforms of a release.
var targets = []struct{ goos, goarch string }{
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"linux", "amd64"}, {"linux", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Artifact names, as goreleaser.yaml writes them.
func archiveName(v, goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("openadapt-agent_%s_%s_%s%s", v, goos, goarch, ext)
}

func sbomName(v, goos, goarch string) string {
	return fmt.Sprintf("openadapt-agent_%s_%s_%s.cdx.json", v, goos, goarch)
}

func binaryName(goos string) string {
	if goos == "windows" {
		return "openadapt-agent.exe"
	}
	return "openadapt-agent"
}

// repositoryOnly reports whether an artifact entry is material that exists
// for the repository's own use (benchmarks, test fixtures, Go sources) and
// must never ship.
func repositoryOnly(name string) bool {
	for _, seg := range strings.Split(name, "/") {
		switch strings.ToLower(seg) {
		case "bench", "testdata", "fixtures", "fixture", ".git", ".ci", "benchmarks.md":
			return true
		}
	}
	base := strings.ToLower(path.Base(name))
	return strings.HasSuffix(base, ".go") || strings.HasSuffix(base, ".txtar") || strings.HasSuffix(base, ".prof") ||
		strings.HasSuffix(base, ".test")
}

// manPages lists docs/cli/man/*.1, the man pages every archive carries.
func manPages() ([]string, error) {
	m, err := filepath.Glob(filepath.Join("docs", "cli", "man", "*.1"))
	if err != nil || len(m) == 0 {
		return nil, fmt.Errorf("no man pages in docs/cli/man (%v)", err)
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out, nil
}

// archiveFiles lists what the archive of one target must hold: under one
// folder named after the archive, the binary, LICENSE, README.md, the
// notices and the man pages.
func archiveFiles(v, goos, goarch string, man []string) []string {
	top := fmt.Sprintf("openadapt-agent_%s_%s_%s/", v, goos, goarch)
	out := []string{top + binaryName(goos), top + "LICENSE", top + "README.md", top + NoticesName}
	for _, m := range man {
		out = append(out, top+"man/"+m)
	}
	slices.Sort(out)
	return out
}

// bundleFiles lists what the MCP bundle of one target must hold.
func bundleFiles(goos string) ([]string, error) {
	manifest, err := os.ReadFile("manifest.json")
	if err != nil {
		return nil, err
	}
	entry, err := mcpbEntry(manifest, goos)
	if err != nil {
		return nil, err
	}
	out := []string{"LICENSE", "README.md", NoticesName, "manifest.json", entry}
	slices.Sort(out)
	return out, nil
}

// unpacked is an artifact's regular files by name (folders are dropped).
type unpacked map[string][]byte

func (u unpacked) names() []string {
	var out []string
	for n := range u {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// unpack reads a .tar.gz or .zip whole. Anything but regular files and
// folders (links, devices) is an error, and so is a name given twice.
func unpack(p string) (unpacked, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	u := unpacked{}
	add := func(name string, b []byte) error {
		if _, dup := u[name]; dup {
			return fmt.Errorf("%s: %s appears twice", filepath.Base(p), name)
		}
		u[name] = b
		return nil
	}
	if strings.HasSuffix(p, ".tar.gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
			}
			switch h.Typeflag {
			case tar.TypeDir:
				continue
			case tar.TypeReg:
			default:
				return nil, fmt.Errorf("%s: %s is not a regular file (type %q)", filepath.Base(p), h.Name, h.Typeflag)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			if err := add(h.Name, b); err != nil {
				return nil, err
			}
		}
		return u, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if !f.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %s is not a regular file", filepath.Base(p), f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", filepath.Base(p), f.Name, err)
		}
		if err := add(f.Name, b); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkRelease proves what the release folder dist holds; every problem is
// collected and reported together. See docs/release.md, "What CI checks".
func checkRelease(dist, version string, out io.Writer) error {
	var problems []string
	fail := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	say := func(format string, a ...any) { fmt.Fprintf(out, "ok "+format+"\n", a...) }

	man, err := manPages()
	if err != nil {
		return err
	}
	// 1. checksums.txt lists exactly the archives, bundles and SBOMs.
	sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return err
	}
	entries, err := verify.ParseChecksums(sums)
	if err != nil {
		return err
	}
	var want, got []string
	for _, t := range targets {
		want = append(want, archiveName(version, t.goos, t.goarch), mcpbName(version, t.goos, t.goarch), sbomName(version, t.goos, t.goarch))
	}
	for _, e := range entries {
		got = append(got, e.Name)
		b, err := os.ReadFile(filepath.Join(dist, e.Name))
		if err != nil {
			fail("%s: %v", e.Name, err)
			continue
		}
		if d := sha256.Sum256(b); hex.EncodeToString(d[:]) != e.SHA256 {
			fail("%s: sha256 differs from checksums.txt", e.Name)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(want, got) {
		fail("checksums.txt lists %v, want %v", got, want)
	} else {
		say("checksums.txt lists the %d artifacts (archives, MCP bundles, SBOMs) with their sha256", len(got))
	}

	for _, t := range targets {
		target := t.goos + "/" + t.goarch
		// 2. The archive and the bundle unpack to their file lists, with
		// no repository-only material.
		arch, err := unpack(filepath.Join(dist, archiveName(version, t.goos, t.goarch)))
		if err != nil {
			fail("%s", err)
			continue
		}
		bundle, err := unpack(filepath.Join(dist, mcpbName(version, t.goos, t.goarch)))
		if err != nil {
			fail("%s", err)
			continue
		}
		wantBundle, err := bundleFiles(t.goos)
		if err != nil {
			return err
		}
		for _, a := range []struct {
			kind  string
			files unpacked
			want  []string
		}{
			{"archive", arch, archiveFiles(version, t.goos, t.goarch, man)},
			{"MCP bundle", bundle, wantBundle},
		} {
			for _, n := range a.files.names() {
				if repositoryOnly(n) {
					fail("%s %s: repository-only material %s", target, a.kind, n)
				}
			}
			if !slices.Equal(a.files.names(), a.want) {
				fail("%s %s holds %v, want %v", target, a.kind, a.files.names(), a.want)
			}
		}
		top := strings.TrimSuffix(strings.TrimSuffix(archiveName(version, t.goos, t.goarch), ".zip"), ".tar.gz") + "/"
		bin := arch[top+binaryName(t.goos)]
		entry, _ := mcpbEntry(bundle["manifest.json"], t.goos)
		if !bytes.Equal(bin, bundle[entry]) {
			fail("%s: the archive's binary and the MCP bundle's differ", target)
		}
		for _, name := range []string{"LICENSE", "README.md", "manifest.json"} {
			repo, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			inArchive := name == "manifest.json" || bytes.Equal(arch[top+name], repo)
			if !inArchive || !bytes.Equal(bundle[name], repo) {
				fail("%s: %s differs from the repository's", target, name)
			}
		}
		for _, m := range man {
			repo, _ := os.ReadFile(filepath.Join("docs", "cli", "man", m))
			if !bytes.Equal(arch[top+"man/"+m], repo) {
				fail("%s: man/%s differs from docs/cli/man", target, m)
			}
		}
		if len(bin) == 0 {
			continue
		}
		binPath := filepath.Join(os.TempDir(), fmt.Sprintf("release-check-%d-%s-%s", os.Getpid(), t.goos, t.goarch))
		if err := os.WriteFile(binPath, bin, 0o755); err != nil {
			return err
		}
		defer os.Remove(binPath)

		// 3. The binary reports the release version.
		if err := checkVersion(bin, version); err != nil {
			fail("%s: %v", target, err)
		}
		// 4. The notices in both artifacts are exactly those of this binary
		// (every linked module, allowed licenses only).
		notices, err := buildNotices(noticesInput{Binary: binPath, GOOS: t.goos, GOARCH: t.goarch, Version: version,
			SnapshotSource: filepath.Join("ledger", "SNAPSHOT-SOURCE.md")})
		if err != nil {
			fail("%s: %v", target, err)
		} else if !bytes.Equal(arch[top+NoticesName], notices) || !bytes.Equal(bundle[NoticesName], notices) {
			fail("%s: %s in the artifacts is not the notices of this binary", target, NoticesName)
		}
		// 5. The SBOM names every linked module at its version.
		if err := checkSBOM(filepath.Join(dist, sbomName(version, t.goos, t.goarch)), binPath, bin); err != nil {
			fail("%s: SBOM: %v", target, err)
		}
		// 6. No package of the repository's own tests, benchmarks or
		// release tooling is linked, and nothing embedded comes from them.
		if err := checkPackages(t.goos, t.goarch); err != nil {
			fail("%s: %v", target, err)
		}
		if len(problems) == 0 {
			say("%s: archive and MCP bundle file lists, binary reports %s, notices, SBOM, no repository-only material", target, version)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("release check failed:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// checkVersion checks that the linker stamped the release version into a
// binary of any platform. Build info cannot say (with -trimpath the go
// command leaves -ldflags out of it), but the version string exists in the
// binary only when -X put it there: the source knows only VERSION's plain
// value. The linux/amd64 binary is also run (see .ci/checks/60-release.sh).
func checkVersion(bin []byte, version string) error {
	if !bytes.Contains(bin, []byte(version)) {
		return fmt.Errorf("the binary does not carry the version %q (set with -X …/buildinfo.version)", version)
	}
	return nil
}

// checkSBOM compares a CycloneDX SBOM with the modules recorded in the
// binary: the same set of module paths, each at the same version, and the
// binary's own sha256.
func checkSBOM(sbomPath, binPath string, bin []byte) error {
	raw, err := os.ReadFile(sbomPath)
	if err != nil {
		return err
	}
	var doc struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				Name string `json:"name"`
			} `json:"component"`
			Properties []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"properties"`
		} `json:"metadata"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return err
	}
	if doc.BOMFormat != "CycloneDX" {
		return fmt.Errorf("bomFormat %q, want CycloneDX", doc.BOMFormat)
	}
	if doc.Metadata.Component.Name != "github.com/OpenAdaptAI/openadapt-agent" {
		return fmt.Errorf("describes %q, not this module", doc.Metadata.Component.Name)
	}
	sum := sha256.Sum256(bin)
	hashOK := false
	for _, p := range doc.Metadata.Properties {
		if p.Name == "cdx:gomod:binary:hash:SHA-256" && p.Value == hex.EncodeToString(sum[:]) {
			hashOK = true
		}
	}
	if !hashOK {
		return errors.New("its binary sha256 is not this binary's")
	}
	_, mods, err := binaryModules(binPath)
	if err != nil {
		return err
	}
	want := map[string]string{}
	for _, m := range mods {
		want[m.Path] = m.Version
	}
	got := map[string]string{}
	for _, c := range doc.Components {
		got[c.Name] = c.Version
	}
	var diffs []string
	for p, v := range want {
		if got[p] != v {
			diffs = append(diffs, fmt.Sprintf("%s: binary %s, SBOM %q", p, v, got[p]))
		}
	}
	for p, v := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s is not linked", p, v))
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	if len(want) == 0 {
		return errors.New("the binary records no modules")
	}
	return nil
}

// checkPackages lists the packages linked into the binary for one target
// and the files they embed.
func checkPackages(goos, goarch string) error {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .EmbedFiles}} {{.}}{{end}}`, "./cmd/openadapt-agent")
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0")
	outb, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list -deps: %w", err)
	}
	const self = "github.com/OpenAdaptAI/openadapt-agent/"
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(outb)), "\n") {
		f := strings.Fields(line)
		pkg := f[0]
		if rest, ok := strings.CutPrefix(pkg, self); ok {
			if strings.HasPrefix(rest, "bench") || strings.HasPrefix(rest, "internal/testing") ||
				(strings.HasPrefix(rest, "internal/release") && rest != "internal/release/verify") {
				bad = append(bad, pkg)
			}
			for _, e := range f[1:] {
				if repositoryOnly(e) {
					bad = append(bad, pkg+" embeds "+e)
				}
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the binary links repository-only packages or files: %s", strings.Join(bad, ", "))
	}
	return nil
}

// moduleDir is the module cache folder of m.
func moduleDir(modcache string, m module.Version) (string, error) {
	ep, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	ev, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(modcache, filepath.FromSlash(ep)+"@"+ev), nil
}
