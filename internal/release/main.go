// Command release holds the two release steps goreleaser cannot do itself.
// It is run by goreleaser.yaml, never by users:
//
//	go run ./internal/release mcpb -binary PATH -goos OS -goarch ARCH -version V -mtime UNIX -out DIR
//	go run ./internal/release server-json -version V -mcpb-dir DIR -in server.json -out FILE
//
// mcpb packs one MCP Bundle per target: manifest.json at the root, the
// binary at server/openadapt-agent (server/openadapt-agent.exe on Windows,
// as manifest.json's win32 override says) with mode 0755, and LICENSE. The
// zip is reproducible: fixed entry order, fixed mtime (the commit time),
// fixed modes, no directory entries. (`mcpb pack` stamps the current time.)
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
	"io"
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
		return errors.New("usage: release mcpb|server-json [flags]")
	}
	switch args[0] {
	case "mcpb":
		fs := flag.NewFlagSet("mcpb", flag.ContinueOnError)
		binary := fs.String("binary", "", "built openadapt-agent binary")
		goos := fs.String("goos", "", "target GOOS")
		goarch := fs.String("goarch", "", "target GOARCH")
		version := fs.String("version", "", "release version without v")
		mtime := fs.Int64("mtime", 0, "entry mtime, Unix seconds (the commit time)")
		manifest := fs.String("manifest", "manifest.json", "MCPB manifest")
		license := fs.String("license", "LICENSE", "license file")
		out := fs.String("out", "", "output folder")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *binary == "" || *goos == "" || *goarch == "" || *version == "" || *out == "" || *mtime <= 0 {
			return errors.New("mcpb: -binary, -goos, -goarch, -version, -mtime and -out are required")
		}
		p, err := packMCPB(mcpbInput{
			Binary: *binary, GOOS: *goos, GOARCH: *goarch, Version: *version,
			MTime: time.Unix(*mtime, 0).UTC(), Manifest: *manifest, License: *license,
		}, *out)
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	case "server-json":
		fs := flag.NewFlagSet("server-json", flag.ContinueOnError)
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
		return os.WriteFile(*out, doc, 0o644)
	}
	return fmt.Errorf("unknown step %q", args[0])
}

// mcpbInput describes one bundle to pack.
type mcpbInput struct {
	Binary, GOOS, GOARCH, Version string
	MTime                         time.Time
	Manifest, License             string
}

// mcpbName is the release file name; the registry requires "mcp" in the URL.
func mcpbName(version, goos, goarch string) string {
	return fmt.Sprintf("openadapt-agent-mcp_%s_%s_%s.mcpb", version, goos, goarch)
}

// packMCPB writes the .mcpb for in into dir and returns its path.
func packMCPB(in mcpbInput, dir string) (string, error) {
	manifest, err := os.ReadFile(in.Manifest)
	if err != nil {
		return "", err
	}
	var m struct {
		Server struct {
			EntryPoint string `json:"entry_point"`
		} `json:"server"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return "", fmt.Errorf("manifest: %w", err)
	}
	entry := m.Server.EntryPoint
	if in.GOOS == "windows" {
		entry += ".exe"
	}
	if entry == "" || path.IsAbs(entry) || strings.Contains(entry, "..") {
		return "", fmt.Errorf("manifest: unusable server.entry_point %q", m.Server.EntryPoint)
	}
	bin, err := os.ReadFile(in.Binary)
	if err != nil {
		return "", err
	}
	license, err := os.ReadFile(in.License)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct {
		name string
		mode os.FileMode
		data []byte
	}{
		{"manifest.json", 0o644, manifest},
		{"LICENSE", 0o644, license},
		{entry, 0o755, bin},
	} {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: in.MTime}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return "", err
		}
		if _, err := w.Write(f.data); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, mcpbName(in.Version, in.GOOS, in.GOARCH))
	tmp, err := os.CreateTemp(dir, ".mcpb-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, &buf); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
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
