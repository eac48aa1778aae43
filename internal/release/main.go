// Command release holds the release steps GoReleaser cannot do itself
// (docs/release.md). goreleaser.yaml and .ci/checks/60-release.sh run it
// with `go run`; the shipped binary never links it.
//
//	go run ./internal/release target -binary PATH -goos OS -goarch ARCH -version V -mtime UNIX -dist DIR
//	go run ./internal/release sign -in FILE -bundle OUT (-public-key PUB | -keyless)
//	go run ./internal/release check -dist DIR -version V
//	go run ./internal/release flip -dist DIR -key PUB
//	go run ./internal/release server-json -version V -mcpb-dir DIR -in server.json -out FILE
//
// target runs after each build: it writes the binary's third-party notices
// (every linked module with its license texts; a module whose license is not
// allowed stops the build) to DIR/notices/OS_ARCH/, where the archive picks
// them up, and packs the MCP bundle DIR/…mcpb. The bundle holds
// manifest.json, LICENSE, README.md, the notices and the binary at
// server/openadapt-agent (server/openadapt-agent.exe on Windows, as
// manifest.json's win32 override says). The zip is reproducible: fixed entry
// order, fixed mtime (the commit time), fixed modes, no folder entries.
// (`mcpb pack` stamps the current time.)
//
// sign signs the checksums file as a Sigstore bundle: with a key made for
// this one signature, whose public key goes to PUB (outside the release
// folder: a verifier must get it out of band), or keyless for a tagged
// release (Fulcio and Rekor, the OIDC token in SIGSTORE_ID_TOKEN).
//
// check proves what a release folder holds (see check.go); flip changes one
// byte at a time in every artifact, the checksums file and the signature
// and digest of the bundle, and requires each change to be refused.
//
// server-json writes the registry document for a release: server.json with
// its version, package versions and download URLs set to V and every
// fileSha256 computed from the packed .mcpb files. The repository copy
// keeps all-zero placeholders, because the digests exist only after the
// build.
package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: release target|sign|check|flip|server-json [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "target":
		binary := fs.String("binary", "", "built openadapt-agent binary")
		goos := fs.String("goos", "", "target GOOS")
		goarch := fs.String("goarch", "", "target GOARCH")
		version := fs.String("version", "", "release version without v")
		mtime := fs.Int64("mtime", 0, "entry mtime, Unix seconds (the commit time)")
		dist := fs.String("dist", "dist", "release folder")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *binary == "" || *goos == "" || *goarch == "" || *version == "" || *mtime <= 0 {
			return errors.New("target: -binary, -goos, -goarch, -version and -mtime are required")
		}
		notices, err := buildNotices(noticesInput{Binary: *binary, GOOS: *goos, GOARCH: *goarch, Version: *version,
			SnapshotSource: filepath.Join("ledger", "SNAPSHOT-SOURCE.md")})
		if err != nil {
			return err
		}
		np := filepath.Join(*dist, "notices", *goos+"_"+*goarch, NoticesName)
		if err := writeFileAtomic(np, notices); err != nil {
			return err
		}
		p, err := packMCPB(mcpbInput{
			Binary: *binary, GOOS: *goos, GOARCH: *goarch, Version: *version,
			MTime: time.Unix(*mtime, 0).UTC(), Manifest: "manifest.json", License: "LICENSE", Readme: "README.md", Notices: np,
		}, *dist)
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "sign":
		in := fs.String("in", "", "file to sign (checksums.txt)")
		out := fs.String("bundle", "", "Sigstore bundle to write")
		pub := fs.String("public-key", "", "where to write the public key of a key-based signature (outside the release folder)")
		keyless := fs.Bool("keyless", false, "sign keyless with Fulcio and Rekor; the OIDC token is read from SIGSTORE_ID_TOKEN")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return signFile(*in, *out, *pub, *keyless)
	case "check":
		dist := fs.String("dist", "dist", "release folder")
		version := fs.String("version", "", "the version the binaries must report")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" {
			return errors.New("check: -version is required")
		}
		return checkRelease(*dist, *version, os.Stdout)
	case "flip":
		dist := fs.String("dist", "dist", "release folder")
		key := fs.String("key", "", "public key of the release signature")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *key == "" {
			return errors.New("flip: -key is required")
		}
		return flipRelease(*dist, *key, os.Stdout)
	case "server-json":
		version := fs.String("version", "", "release version without v")
		dir := fs.String("mcpb-dir", "", "folder with the packed .mcpb files")
		in := fs.String("in", "server.json", "repository server.json")
		out := fs.String("out", "", "output file")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" || *dir == "" || *out == "" {
			return errors.New("server-json: -version, -mcpb-dir and -out are required")
		}
		src, err := os.ReadFile(*in)
		if err != nil {
			return err
		}
		doc, err := releaseServerJSON(src, *version, *dir)
		if err != nil {
			return err
		}
		return writeFileAtomic(*out, doc)
	}
	return fmt.Errorf("unknown step %q", args[0])
}

// writeFileAtomic writes data to p (mode 0644) through a temporary file in
// the same folder, creating the folder.
func writeFileAtomic(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".release-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// mcpbInput describes one bundle to pack.
type mcpbInput struct {
	Binary, GOOS, GOARCH, Version string
	MTime                         time.Time
	Manifest, License, Readme     string
	Notices                       string
}

// mcpbName is the release file name; the registry requires "mcp" in the URL.
func mcpbName(version, goos, goarch string) string {
	return fmt.Sprintf("openadapt-agent-mcp_%s_%s_%s.mcpb", version, goos, goarch)
}

// mcpbEntry is the binary's place in a bundle for goos, from the manifest.
func mcpbEntry(manifest []byte, goos string) (string, error) {
	var m struct {
		Server struct {
			EntryPoint string `json:"entry_point"`
		} `json:"server"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	entry := m.Server.EntryPoint
	if entry == "" || path.IsAbs(entry) || strings.Contains(entry, "..") {
		return "", fmt.Errorf("manifest: unusable server.entry_point %q", m.Server.EntryPoint)
	}
	if goos == "windows" {
		entry += ".exe"
	}
	return entry, nil
}

// packMCPB writes the .mcpb for in into dir and returns its path.
func packMCPB(in mcpbInput, dir string) (string, error) {
	manifest, err := os.ReadFile(in.Manifest)
	if err != nil {
		return "", err
	}
	entry, err := mcpbEntry(manifest, in.GOOS)
	if err != nil {
		return "", err
	}
	files := []struct {
		name string
		mode os.FileMode
		src  string
		data []byte
	}{
		{"manifest.json", 0o644, "", manifest},
		{"LICENSE", 0o644, in.License, nil},
		{"README.md", 0o644, in.Readme, nil},
		{NoticesName, 0o644, in.Notices, nil},
		{entry, 0o755, in.Binary, nil},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		data := f.data
		if f.src != "" {
			if data, err = os.ReadFile(f.src); err != nil {
				return "", err
			}
		}
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: in.MTime}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	p := filepath.Join(dir, mcpbName(in.Version, in.GOOS, in.GOARCH))
	return p, writeFileAtomic(p, buf.Bytes())
}

// versionInURL finds the version parts of a package download URL:
// …/releases/download/v<V>/openadapt-agent-mcp_<V>_<os>_<arch>.mcpb.
var versionInURL = regexp.MustCompile(`/download/v[^/]+/openadapt-agent-mcp_[^_]+_([a-z0-9]+)_([a-z0-9]+)\.mcpb$`)

// releaseServerJSON rewrites the repository server.json for version and
// fills every package's fileSha256 from the .mcpb files in dir. It fails when
// a package's file is missing, so a published document never carries a
// placeholder digest.
func releaseServerJSON(src []byte, version, dir string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("server.json: %w", err)
	}
	doc["version"] = version
	pkgs, _ := doc["packages"].([]any)
	if len(pkgs) == 0 {
		return nil, errors.New("server.json: no packages")
	}
	for i, p := range pkgs {
		pkg, _ := p.(map[string]any)
		id, _ := pkg["identifier"].(string)
		m := versionInURL.FindStringSubmatch(id)
		if m == nil {
			return nil, fmt.Errorf("server.json: packages[%d].identifier is not a release .mcpb URL", i)
		}
		name := mcpbName(version, m[1], m[2])
		pkg["identifier"] = id[:strings.Index(id, "/download/")] + "/download/v" + version + "/" + name
		pkg["version"] = version
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("packages[%d]: %w", i, err)
		}
		sum := sha256.Sum256(b)
		pkg["fileSha256"] = hex.EncodeToString(sum[:])
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
