package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/module"
)

// NoticesName is the file every archive and MCP bundle carries.
const NoticesName = "THIRD_PARTY_NOTICES.txt"

// allowed are the licenses a linked module may have: permissive licenses
// whose only duty is to pass on the notice, which the notices file does.
var allowed = map[string]bool{
	"Apache-2.0":   true,
	"BSD-2-Clause": true,
	"BSD-3-Clause": true,
	"ISC":          true,
	"MIT":          true,
}

// refusedWhy explains licenses that are recognised but not allowed. MPL-2.0
// is file-level copyleft: a module under it may be linked only after naming
// it in [allowed] on purpose, with the duty to point to its source written
// down in docs/release.md.
var refusedWhy = map[string]string{
	"MPL-2.0":      "file-level copyleft; allow it only by adding MPL-2.0 to the allowlist after review",
	"GPL":          "copyleft",
	"LGPL":         "copyleft",
	"AGPL":         "network copyleft",
	"EPL":          "copyleft",
	"CDDL":         "copyleft",
	"CC-BY-SA-4.0": "share-alike",
}

// namedOnly are licenses found by a distinctive phrase rather than by their
// full text: enough to name them in the refusal.
var namedOnly = []struct {
	id, phrase string
}{
	{"MPL-2.0", "mozilla public license version 2 0"},
	{"MPL-2.0", "mozilla public license v 2 0"},
	{"AGPL", "gnu affero general public license"},
	{"LGPL", "gnu lesser general public license"},
	{"LGPL", "gnu library general public license"},
	{"GPL", "gnu general public license"},
	{"EPL", "eclipse public license"},
	{"CDDL", "common development and distribution license"},
	{"CC-BY-SA-4.0", "attribution sharealike 4 0 international"},
}

//go:embed licenses/*.txt
var licenseTexts embed.FS

// templates are the full texts (licenses/<id>.txt) matched word by word;
// "<<>>" in a text stands for up to 12 words (a name, a list marker).
var templates = func() []licenseTemplate {
	ids := map[string]string{
		"Apache-2.0.txt":          "Apache-2.0",
		"Apache-2.0-appendix.txt": "Apache-2.0",
		"Apache-2.0-notice.txt":   "Apache-2.0",
		"BSD-2-Clause.txt":        "BSD-2-Clause",
		"BSD-3-Clause.txt":        "BSD-3-Clause",
		"ISC.txt":                 "ISC",
		"MIT.txt":                 "MIT",
	}
	var out []licenseTemplate
	for name, id := range ids {
		b, err := licenseTexts.ReadFile("licenses/" + name)
		if err != nil {
			panic("release: license template " + name + ": " + err.Error())
		}
		var parts []string
		for _, p := range strings.Split(string(b), "<<>>") {
			if n := normalize(p); n != "" {
				parts = append(parts, regexp.QuoteMeta(n))
			}
		}
		out = append(out, licenseTemplate{id: id, name: name, re: regexp.MustCompile(strings.Join(parts, ` (?:[a-z0-9]+ ){0,12}`))})
	}
	slices.SortFunc(out, func(a, b licenseTemplate) int { return strings.Compare(a.name, b.name) })
	return out
}()

type licenseTemplate struct {
	id, name string
	re       *regexp.Regexp
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// normalize lowercases s and turns every run of other characters into one
// space, so line breaks, punctuation and quotes never matter.
func normalize(s string) string {
	return strings.TrimSpace(nonWord.ReplaceAllString(strings.ToLower(s), " "))
}

// maxUncovered is how many words of a license file may lie outside every
// matched license text: the title and copyright lines.
const maxUncovered = 40

// classify returns the licenses whose full text is in text, or a reason
// why the text is not recognised.
func classify(text string) (ids []string, problem string) {
	n := normalize(text)
	covered := make([]bool, len(n))
	for _, t := range templates {
		for _, m := range t.re.FindAllStringIndex(n, -1) {
			for i := m[0]; i < m[1]; i++ {
				covered[i] = true
			}
			if !slices.Contains(ids, t.id) {
				ids = append(ids, t.id)
			}
		}
	}
	slices.Sort(ids)
	uncovered := 0
	inWord := false
	for i := 0; i < len(n); i++ {
		w := !covered[i] && n[i] != ' '
		if w && !inWord {
			uncovered++
		}
		inWord = w
	}
	// MPL-2.0's own text names the GNU licenses (as "Secondary Licenses"),
	// so once it is found those names say nothing more.
	mpl := strings.Contains(n, "mozilla public license")
	named := false
	for _, nl := range namedOnly {
		if mpl && strings.HasSuffix(nl.id, "GPL") {
			continue
		}
		if strings.Contains(n, nl.phrase) && !slices.Contains(ids, nl.id) {
			ids = append(ids, nl.id)
			named = true
		}
	}
	slices.Sort(ids)
	switch {
	case named:
		// Known by name only: the allowlist decides (inspectModule).
	case len(ids) == 0:
		problem = "no known license text"
	case uncovered > maxUncovered:
		problem = fmt.Sprintf("%d words outside any known license text (review it and add it to the reviewed list)", uncovered)
	}
	return ids, problem
}

// reviewedFile is a license file read by a person, pinned by its digest: a
// changed text needs a new review.
type reviewedFile struct {
	module, file, sha256 string
	// licenses apply to code the binary links; none for a file that covers
	// only documentation.
	licenses []string
	why      string
}

var reviewed = []reviewedFile{
	{
		module: "github.com/klauspost/compress", file: "LICENSE",
		sha256:   "0d9e582ee4bff57bf1189c9e514e6da7ce277f9cd3bc2d488b22fbb39a6d87cf",
		licenses: []string{"Apache-2.0", "BSD-3-Clause", "MIT"},
		why:      "one file with a section per folder: BSD-3-Clause for most code, Apache-2.0 for gzhttp, MIT for s2's readahead and filepathx",
	},
	{
		module: "github.com/modelcontextprotocol/go-sdk", file: "LICENSE",
		sha256:   "af679003d933f045393a6a029f43da113f9ae364eac651d9ae268392985580f5",
		licenses: []string{"Apache-2.0", "MIT"},
		why:      "the project is moving from MIT to Apache-2.0: each contribution is under one of the two (both texts are in the file); CC-BY-4.0 covers its documentation, which the binary does not contain",
	},
	{
		module: "github.com/opencontainers/go-digest", file: "LICENSE.docs",
		sha256: "a1d1adec3ba691ef6e377a78bbe9e9e2501f2f4a1723d08857da1ac6564e4fed",
		why:    "CC-BY-SA-4.0 for the project's documentation; the binary links only its Go code (Apache-2.0, in LICENSE)",
	},
	{
		module: "go.yaml.in/yaml/v3", file: "LICENSE",
		sha256:   "d18f6323b71b0b768bb5e9616e36da390fbd39369a81807cca352de4e4e6aa0b",
		licenses: []string{"Apache-2.0", "MIT"},
		why:      "the files ported from libyaml are MIT, the rest Apache-2.0 (both texts are in the file)",
	},
	{
		module: "gopkg.in/yaml.v2", file: "LICENSE.libyaml",
		sha256:   "a94710b55e03b5285f77d048c5ba61bb9d6ee04a06c0eb90e68821e11b0c707a",
		licenses: []string{"MIT"},
		why:      "the MIT text for the files ported from libyaml, after the list of those files",
	},
}

// noticeFile is one file copied into the notices.
type noticeFile struct {
	name string
	text []byte
}

// linkedModule is a module the binary links, with its notice files.
type linkedModule struct {
	path, version string
	files         []noticeFile
	licenses      []string // SPDX ids of the code's licenses
	problems      []string
}

// noticeFileName matches the files copied from a module's root folder.
var noticeFileName = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents|unlicense)([._-][a-z0-9._-]*)?$`)

// isLicenseName reports whether a notice file states a license (and so is
// classified) rather than being a NOTICE or PATENTS file passed on as is.
func isLicenseName(name string) bool {
	u := strings.ToUpper(name)
	return strings.HasPrefix(u, "LICEN") || strings.HasPrefix(u, "COPYING") || strings.HasPrefix(u, "UNLICENSE")
}

// binaryModules reads the modules recorded in a Go binary of any platform
// (what `go version -m` prints): the toolchain version and every dependency
// at its final version (after replacements).
func binaryModules(binary string) (goVersion string, mods []module.Version, err error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return "", nil, fmt.Errorf("reading build info of %s: %w", filepath.Base(binary), err)
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if d.Version == "" {
			return "", nil, fmt.Errorf("%s: module %s is replaced by a local folder; a release links only published modules", filepath.Base(binary), d.Path)
		}
		mods = append(mods, module.Version{Path: d.Path, Version: d.Version})
	}
	slices.SortFunc(mods, func(a, b module.Version) int { return strings.Compare(a.Path, b.Path) })
	return bi.GoVersion, mods, nil
}

// goEnv asks the go command for one setting.
func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// readNoticeFiles returns the notice files at the root of dir, sorted.
func readNoticeFiles(dir string) ([]noticeFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []noticeFile
	for _, e := range ents {
		if !e.Type().IsRegular() || !noticeFileName.MatchString(e.Name()) || strings.HasSuffix(strings.ToLower(e.Name()), ".go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, noticeFile{name: e.Name(), text: b})
	}
	return out, nil
}

// inspectModule reads a module's notice files from the module cache and
// decides its licenses.
func inspectModule(modcache string, m module.Version) (linkedModule, error) {
	lm := linkedModule{path: m.Path, version: m.Version}
	dir, err := moduleDir(modcache, m)
	if err != nil {
		return lm, err
	}
	if lm.files, err = readNoticeFiles(dir); err != nil {
		return lm, fmt.Errorf("module %s@%s is not in the module cache (run go mod download): %w", m.Path, m.Version, err)
	}
	for _, f := range lm.files {
		if !isLicenseName(f.name) {
			continue
		}
		sum := sha256.Sum256(f.text)
		digest := hex.EncodeToString(sum[:])
		var ids []string
		problem := ""
		if r, ok := reviewedFor(m.Path, f.name); ok && r.sha256 == digest {
			ids = r.licenses
		} else {
			ids, problem = classify(string(f.text))
			if ok {
				problem = fmt.Sprintf("changed since it was reviewed (sha256 %s); %s", digest, orNone(problem))
			}
		}
		if problem != "" {
			lm.problems = append(lm.problems, fmt.Sprintf("%s: %s", f.name, problem))
		}
		for _, id := range ids {
			if !slices.Contains(lm.licenses, id) {
				lm.licenses = append(lm.licenses, id)
			}
		}
	}
	slices.Sort(lm.licenses)
	if len(lm.licenses) == 0 && len(lm.problems) == 0 {
		lm.problems = append(lm.problems, "no license file at the module root")
	}
	for _, id := range lm.licenses {
		if !allowed[id] {
			why := refusedWhy[id]
			if why == "" {
				why = "not a permissive license"
			}
			lm.problems = append(lm.problems, fmt.Sprintf("%s is not in the allowlist (%s)", id, why))
		}
	}
	return lm, nil
}

func orNone(s string) string {
	if s == "" {
		return "the text is recognised as a known license"
	}
	return s
}

func reviewedFor(mod, file string) (reviewedFile, bool) {
	for _, r := range reviewed {
		if r.module == mod && r.file == file {
			return r, true
		}
	}
	return reviewedFile{}, false
}

// ErrLicense reports linked modules whose license is not allowed or not
// recognised.
var ErrLicense = errors.New("license check failed")

// noticesInput is what the notices of one binary are made from.
type noticesInput struct {
	Binary, GOOS, GOARCH, Version string
	// ModCache and GoRoot default to `go env GOMODCACHE` and `go env GOROOT`.
	ModCache, GoRoot string
	// SnapshotSource is ledger/SNAPSHOT-SOURCE.md.
	SnapshotSource string
}

// buildNotices writes the third-party notices of one binary. It fails with
// an error wrapping [ErrLicense] that lists every module whose license is
// not allowed or not recognised, before writing anything.
func buildNotices(in noticesInput) ([]byte, error) {
	goVersion, mods, err := binaryModules(in.Binary)
	if err != nil {
		return nil, err
	}
	if in.ModCache == "" {
		if in.ModCache, err = goEnv("GOMODCACHE"); err != nil {
			return nil, err
		}
	}
	if in.GoRoot == "" {
		if in.GoRoot, err = goEnv("GOROOT"); err != nil {
			return nil, err
		}
		v, err := goEnv("GOVERSION")
		if err != nil {
			return nil, err
		}
		if v != goVersion {
			return nil, fmt.Errorf("%s was built with %s, this toolchain is %s: its standard library notices would not match", filepath.Base(in.Binary), goVersion, v)
		}
	}
	snapshot, err := os.ReadFile(in.SnapshotSource)
	if err != nil {
		return nil, fmt.Errorf("ledger snapshot provenance: %w", err)
	}
	var linked []linkedModule
	var problems []string
	for _, m := range mods {
		lm, err := inspectModule(in.ModCache, m)
		if err != nil {
			return nil, err
		}
		for _, p := range lm.problems {
			problems = append(problems, fmt.Sprintf("%s@%s: %s", m.Path, m.Version, p))
		}
		linked = append(linked, lm)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w for %s/%s:\n  %s", ErrLicense, in.GOOS, in.GOARCH, strings.Join(problems, "\n  "))
	}
	std, err := readNoticeFiles(in.GoRoot)
	if err != nil {
		return nil, fmt.Errorf("notices of the Go standard library: %w", err)
	}
	var b bytes.Buffer
	rule := strings.Repeat("=", 72) + "\n"
	fmt.Fprintf(&b, "Third-party notices for openadapt-agent %s (%s/%s)\n\n", in.Version, in.GOOS, in.GOARCH)
	b.WriteString(wrap(`This binary is openadapt-agent (MIT, see LICENSE). It links the Go
standard library and the Go modules listed below, each at the version
recorded in the binary (go version -m). For each one this file repeats the
license it is used under and the full text of every LICENSE, COPYING,
NOTICE and PATENTS file at the root of that module, as published in the Go
module cache. The binary also embeds a dated snapshot of OpenAdapt's
published admission ledgers; where it comes from is stated at the end.`))
	b.WriteString("\nModules:\n")
	fmt.Fprintf(&b, "  %s (Go standard library) BSD-3-Clause\n", goVersion)
	for _, m := range linked {
		fmt.Fprintf(&b, "  %s %s %s\n", m.path, m.version, strings.Join(m.licenses, " AND "))
	}
	section := func(title, license string, files []noticeFile) {
		b.WriteString("\n" + rule + title + "\n")
		if license != "" {
			b.WriteString("License: " + license + "\n")
		}
		b.WriteString(rule)
		for _, f := range files {
			fmt.Fprintf(&b, "\n----- %s -----\n\n", f.name)
			b.Write(bytes.TrimRight(bytes.ReplaceAll(f.text, []byte("\r\n"), []byte("\n")), "\n"))
			b.WriteString("\n")
		}
	}
	section("Go standard library "+goVersion, "BSD-3-Clause", std)
	for _, m := range linked {
		section(m.path+" "+m.version, strings.Join(m.licenses, " AND "), m.files)
	}
	section("Embedded ledger snapshot: provenance", "", []noticeFile{{name: path.Join("ledger", "SNAPSHOT-SOURCE.md"), text: snapshot}})
	return b.Bytes(), nil
}

// wrap returns a paragraph as written, with a final newline.
func wrap(s string) string { return strings.TrimSpace(s) + "\n" }
