package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRepositoryOnly(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"openadapt-agent_1_linux_amd64/openadapt-agent": false,
		"openadapt-agent_1_linux_amd64/man/x.1":         false,
		"THIRD_PARTY_NOTICES.txt":                       false,
		"server/openadapt-agent.exe":                    false,
		"x/testdata/a.json":                             true,
		"bench/genbundles/main.go":                      true,
		"x/fixtures/a":                                  true,
		"x/BENCHMARKS.md":                               true,
		"a/b_test.go":                                   true,
		"script/usage.txtar":                            true,
	} {
		if got := repositoryOnly(name); got != want {
			t.Errorf("repositoryOnly(%q) = %v, want %v", name, got, want)
		}
	}
}

func tarGz(t *testing.T, hdrs ...*tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(make([]byte, h.Size))
		}
	}
	tw.Close()
	zw.Close()
	return writeFile(t, filepath.Join(t.TempDir(), "x.tar.gz"), buf.Bytes())
}

func TestUnpackRefuses(t *testing.T) {
	t.Parallel()
	ok := tarGz(t, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755}, &tar.Header{Name: "d/a", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644})
	u, err := unpack(ok)
	if err != nil || strings.Join(u.names(), ",") != "d/a" {
		t.Fatalf("%v %v", u.names(), err)
	}
	for name, p := range map[string]string{
		"symlink":   tarGz(t, &tar.Header{Name: "d/a", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
		"duplicate": tarGz(t, &tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1}, &tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 1}),
	} {
		if _, err := unpack(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCheckSBOM builds an SBOM of the running test binary in the shape
// cyclonedx-gomod writes, then breaks it one way at a time.
func TestCheckSBOM(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	_, mods, err := binaryModules(exe)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bin)
	type comp struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	build := func(edit func(doc map[string]any, comps *[]comp)) string {
		var comps []comp
		for _, m := range mods {
			comps = append(comps, comp{m.Path, m.Version})
		}
		doc := map[string]any{
			"bomFormat": "CycloneDX",
			"metadata": map[string]any{
				"component":  map[string]any{"name": "github.com/OpenAdaptAI/openadapt-agent"},
				"properties": []map[string]string{{"name": "cdx:gomod:binary:hash:SHA-256", "value": hex.EncodeToString(sum[:])}},
			},
		}
		if edit != nil {
			edit(doc, &comps)
		}
		doc["components"] = comps
		b, _ := json.Marshal(doc)
		return writeFile(t, filepath.Join(t.TempDir(), "sbom.json"), b)
	}
	if err := checkSBOM(build(nil), exe, bin); err != nil {
		t.Fatalf("good SBOM: %v", err)
	}
	for name, edit := range map[string]func(map[string]any, *[]comp){
		"other version":  func(_ map[string]any, c *[]comp) { (*c)[0].Version = "v0.0.0-other" },
		"module missing": func(_ map[string]any, c *[]comp) { *c = (*c)[1:] },
		"extra module":   func(_ map[string]any, c *[]comp) { *c = append(*c, comp{"example.com/extra", "v1.0.0"}) },
		"other binary": func(d map[string]any, _ *[]comp) {
			d["metadata"].(map[string]any)["properties"] = []map[string]string{{"name": "cdx:gomod:binary:hash:SHA-256", "value": strings.Repeat("0", 64)}}
		},
		"not CycloneDX": func(d map[string]any, _ *[]comp) { d["bomFormat"] = "SPDX" },
	} {
		if err := checkSBOM(build(edit), exe, bin); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
