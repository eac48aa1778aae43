package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeFile(t *testing.T, p string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPackMCPB(t *testing.T) {
	src := t.TempDir()
	bin := writeFile(t, filepath.Join(src, "openadapt-agent"), []byte("\x7fELF fake binary"))
	mtime := time.Unix(1796026934, 0).UTC()
	for _, goos := range []string{"linux", "windows"} {
		in := mcpbInput{Binary: bin, GOOS: goos, GOARCH: "arm64", Version: "0.1.0", MTime: mtime,
			Manifest: "../../manifest.json", License: "../../LICENSE", Readme: "../../README.md",
			Notices: writeFile(t, filepath.Join(src, NoticesName), []byte("notices\n"))}
		a, err := packMCPB(in, filepath.Join(t.TempDir(), "a"))
		if err != nil {
			t.Fatal(err)
		}
		// Touching the inputs must not change the bundle.
		now := time.Now()
		os.Chtimes(bin, now, now)
		b, err := packMCPB(in, filepath.Join(t.TempDir(), "b"))
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(a) != "openadapt-agent-mcp_0.1.0_"+goos+"_arm64.mcpb" {
			t.Errorf("name = %s", filepath.Base(a))
		}
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if !bytes.Equal(ab, bb) {
			t.Errorf("%s: two packs differ", goos)
		}
		zr, err := zip.NewReader(bytes.NewReader(ab), int64(len(ab)))
		if err != nil {
			t.Fatal(err)
		}
		entry := "server/openadapt-agent"
		if goos == "windows" {
			entry += ".exe"
		}
		var got []string
		for _, f := range zr.File {
			got = append(got, f.Name+" "+f.Mode().String())
			if !f.Modified.Equal(mtime) {
				t.Errorf("%s: mtime %v, want %v", f.Name, f.Modified, mtime)
			}
		}
		want := []string{"manifest.json -rw-r--r--", "LICENSE -rw-r--r--", "README.md -rw-r--r--",
			NoticesName + " -rw-r--r--", entry + " -rwxr-xr-x"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s entries (-want +got):\n%s", goos, diff)
		}
		rc, _ := zr.File[0].Open()
		var mb bytes.Buffer
		mb.ReadFrom(rc)
		repo, _ := os.ReadFile("../../manifest.json")
		if !bytes.Equal(mb.Bytes(), repo) {
			t.Error("manifest.json in the bundle differs from the repository's")
		}
	}
}

func TestReleaseServerJSON(t *testing.T) {
	src, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	want := map[string]string{}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			name := mcpbName("1.2.3", goos, arch)
			body := []byte(name)
			writeFile(t, filepath.Join(dir, name), body)
			sum := sha256.Sum256(body)
			want["https://github.com/OpenAdaptAI/openadapt-agent/releases/download/v1.2.3/"+name] = hex.EncodeToString(sum[:])
		}
	}
	out, err := releaseServerJSON(src, "1.2.3", dir)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version  string `json:"version"`
		Packages []struct {
			Identifier string `json:"identifier"`
			Version    string `json:"version"`
			FileSHA256 string `json:"fileSha256"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "1.2.3" || len(doc.Packages) != 6 {
		t.Fatalf("version %q, %d packages", doc.Version, len(doc.Packages))
	}
	got := map[string]string{}
	for _, p := range doc.Packages {
		if p.Version != "1.2.3" {
			t.Errorf("%s: version %q", p.Identifier, p.Version)
		}
		got[p.Identifier] = p.FileSHA256
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Contains(string(out), `\u003c`) {
		t.Error("HTML escaping in the output")
	}

	// A missing bundle is an error, never a placeholder digest.
	os.Remove(filepath.Join(dir, mcpbName("1.2.3", "darwin", "arm64")))
	if _, err := releaseServerJSON(src, "1.2.3", dir); err == nil {
		t.Error("no error for a missing .mcpb")
	}
}
