package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/module"
)

func template(t *testing.T, name string) string {
	t.Helper()
	b, err := licenseTexts.ReadFile("licenses/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "<<>>", "Example Authors")
}

const mpl = `Mozilla Public License, version 2.0

1. Definitions

1.1. "Contributor" means each individual or legal entity that creates,
contributes to the creation of, or owns Covered Software.
`

func TestClassify(t *testing.T) {
	t.Parallel()
	mit := "MIT License\n\nCopyright (c) 2024 Example Authors\n\n" + template(t, "MIT.txt")
	apache := "                 Apache License\n   Version 2.0, January 2004\n   http://www.apache.org/licenses/\n\n" +
		template(t, "Apache-2.0.txt") + "\n   END OF TERMS AND CONDITIONS\n\n" + template(t, "Apache-2.0-appendix.txt") +
		"\n   Copyright 2020 Example\n\n" + template(t, "Apache-2.0-notice.txt")
	bsd3 := "Copyright (c) 2009 The Go Authors. All rights reserved.\n\n" + template(t, "BSD-3-Clause.txt")
	for _, tc := range []struct {
		name, text string
		ids        []string
		problem    string // a substring; "" for none
	}{
		{"MIT", mit, []string{"MIT"}, ""},
		{"MIT with CRLF", strings.ReplaceAll(mit, "\n", "\r\n"), []string{"MIT"}, ""},
		{"Apache-2.0 with appendix", apache, []string{"Apache-2.0"}, ""},
		{"Apache-2.0 notice only", "Copyright 2018 A. Person\n\n" + template(t, "Apache-2.0-notice.txt"), []string{"Apache-2.0"}, ""},
		{"BSD-3-Clause", bsd3, []string{"BSD-3-Clause"}, ""},
		{"BSD-2-Clause", "BSD 2-Clause License\n\nCopyright (c) 2017, X\n\n" + template(t, "BSD-2-Clause.txt"), []string{"BSD-2-Clause"}, ""},
		{"ISC", "Copyright (c) 2020 X\n\n" + template(t, "ISC.txt"), []string{"ISC"}, ""},
		{"MIT and Apache", mit + "\n---\n" + apache, []string{"Apache-2.0", "MIT"}, ""},
		{"MPL-2.0 is named", mpl, []string{"MPL-2.0"}, ""},
		{"GPL is named", "GNU GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007\n", []string{"GPL"}, ""},
		{"MIT naming the GPL", mit + "\nParts are under the GNU General Public License.\n", []string{"GPL", "MIT"}, ""},
		{"MIT plus a condition", mit + "\n" + strings.Repeat("You may not use this software for any commercial purpose. ", 5),
			[]string{"MIT"}, "words outside any known license text"},
		{"MIT with a clause cut out", strings.Replace(mit, "The above copyright notice and this permission notice shall be included in\nall copies or substantial portions of the Software.", "", 1),
			nil, "no known license text"},
		{"nothing", "All rights reserved.\n", nil, "no known license text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, problem := classify(tc.text)
			if diff := cmp.Diff(tc.ids, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if (tc.problem == "") != (problem == "") || !strings.Contains(problem, tc.problem) {
				t.Errorf("problem %q, want one containing %q", problem, tc.problem)
			}
		})
	}
}

// fakeModule writes a module into a fake module cache.
func fakeModule(t *testing.T, cache string, m module.Version, files map[string]string) {
	t.Helper()
	dir, err := moduleDir(cache, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, text := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspectModule(t *testing.T) {
	t.Parallel()
	cache := t.TempDir()
	mit := "Copyright (c) 2024 X\n\n" + template(t, "MIT.txt")
	mods := map[string]map[string]string{
		"example.com/ok": {"LICENSE": mit, "NOTICE": "notice text\n", "PATENTS": "patent grant\n",
			"license.go": "package x", "license_test.go": "package x", "README.md": "readme"},
		"example.com/Upper":   {"COPYING": mit},
		"example.com/mpl":     {"LICENSE": mpl},
		"example.com/none":    {"README.md": "no license here"},
		"example.com/unknown": {"LICENSE": "You may use this if you ask nicely.\n"},
		// A reviewed file whose text changed since.
		"github.com/opencontainers/go-digest": {"LICENSE": template(t, "Apache-2.0-notice.txt"), "LICENSE.docs": "Attribution-ShareAlike 4.0 International\n"},
	}
	for p, files := range mods {
		fakeModule(t, cache, module.Version{Path: p, Version: "v1.0.0"}, files)
	}
	for _, tc := range []struct {
		path     string
		files    []string
		licenses []string
		problem  string
	}{
		{"example.com/ok", []string{"LICENSE", "NOTICE", "PATENTS"}, []string{"MIT"}, ""},
		{"example.com/Upper", []string{"COPYING"}, []string{"MIT"}, ""},
		{"example.com/mpl", []string{"LICENSE"}, []string{"MPL-2.0"}, "MPL-2.0 is not in the allowlist"},
		{"example.com/none", nil, nil, "no license file at the module root"},
		{"example.com/unknown", []string{"LICENSE"}, nil, "LICENSE: no known license text"},
		{"github.com/opencontainers/go-digest", []string{"LICENSE", "LICENSE.docs"}, []string{"Apache-2.0", "CC-BY-SA-4.0"}, "LICENSE.docs: changed since it was reviewed"},
	} {
		lm, err := inspectModule(cache, module.Version{Path: tc.path, Version: "v1.0.0"})
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		var names []string
		for _, f := range lm.files {
			names = append(names, f.name)
		}
		if diff := cmp.Diff(tc.files, names); diff != "" {
			t.Errorf("%s files (-want +got):\n%s", tc.path, diff)
		}
		if diff := cmp.Diff(tc.licenses, lm.licenses); diff != "" {
			t.Errorf("%s licenses (-want +got):\n%s", tc.path, diff)
		}
		joined := strings.Join(lm.problems, "; ")
		if (tc.problem == "") != (joined == "") || !strings.Contains(joined, tc.problem) {
			t.Errorf("%s problems %q, want one containing %q", tc.path, joined, tc.problem)
		}
	}
	if _, err := inspectModule(cache, module.Version{Path: "example.com/absent", Version: "v1.0.0"}); err == nil {
		t.Error("a module missing from the cache is not an error")
	}
}

// TestReviewedFilesPinned: every reviewed entry names a digest and, unless
// it covers documentation only, the licenses, all of them allowed.
func TestReviewedFilesPinned(t *testing.T) {
	t.Parallel()
	for _, r := range reviewed {
		if len(r.sha256) != 64 || r.why == "" {
			t.Errorf("%s %s: digest %q, reason %q", r.module, r.file, r.sha256, r.why)
		}
		for _, id := range r.licenses {
			if !allowed[id] {
				t.Errorf("%s %s: %s is not allowed", r.module, r.file, id)
			}
		}
	}
}

// TestNoticesOfThisTestBinary builds the notices of the running test
// binary from the real module cache: every module it links is listed with
// its license text, the Go standard library and the ledger snapshot's
// provenance included.
func TestNoticesOfThisTestBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in := noticesInput{Binary: exe, GOOS: "test", GOARCH: "test", Version: "0.0.0-test",
		SnapshotSource: filepath.Join("..", "..", "ledger", "SNAPSHOT-SOURCE.md")}
	// This test binary links the release signer, and through it two
	// MPL-2.0 modules the shipped binary never links: the allowlist check
	// must name exactly those.
	_, err = buildNotices(in)
	if err == nil {
		t.Fatal("MPL-2.0 modules passed the allowlist")
	}
	for _, line := range strings.Split(err.Error(), "\n")[1:] {
		if !strings.HasPrefix(strings.TrimSpace(line), "github.com/hashicorp/") || !strings.Contains(line, "MPL-2.0") {
			t.Errorf("unexpected problem: %s", line)
		}
	}
	allowed["MPL-2.0"] = true
	defer delete(allowed, "MPL-2.0")
	b, err := buildNotices(in)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	_, mods, err := binaryModules(exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 3 {
		t.Fatalf("the test binary links %d modules", len(mods))
	}
	for _, m := range mods {
		if !strings.Contains(text, "\n"+strings.Repeat("=", 72)+"\n"+m.Path+" "+m.Version+"\nLicense: ") {
			t.Errorf("no section for %s %s", m.Path, m.Version)
		}
	}
	for _, want := range []string{"Go standard library go1.", "----- PATENTS -----", "Embedded ledger snapshot: provenance", "----- ledger/SNAPSHOT-SOURCE.md -----"} {
		if !strings.Contains(text, want) {
			t.Errorf("notices lack %q", want)
		}
	}
	// Deterministic: a second run gives the same bytes.
	again, _ := buildNotices(in)
	if string(again) != text {
		t.Error("two runs differ")
	}
	if !slices.IsSortedFunc(mods, func(a, b module.Version) int { return strings.Compare(a.Path, b.Path) }) {
		t.Error("modules are not sorted")
	}
}
