package skill

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

type installEnv struct {
	home, proj, work string
	env              map[string]string
	warns            []string
}

func newInstallEnv(t *testing.T) *installEnv {
	t.Helper()
	base := t.TempDir()
	e := &installEnv{home: filepath.Join(base, "home"), proj: filepath.Join(base, "proj")}
	e.work = filepath.Join(e.proj, "a", "b")
	os.MkdirAll(e.work, 0o755)
	os.MkdirAll(e.home, 0o755)
	os.WriteFile(filepath.Join(e.proj, ".git"), []byte("gitdir: elsewhere\n"), 0o644) // a worktree's .git file
	e.env = map[string]string{"HOME": e.home}
	return e
}

var fixedNow = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func (e *installEnv) opts(src string, agents ...string) InstallOptions {
	return InstallOptions{
		Source: src, Agents: agents, Scope: ScopeProject, WorkDir: e.work,
		Getenv:        func(k string) string { return e.env[k] },
		BundleOptions: []bundle.Option{bundle.WithKey("test-passphrase")},
		Now:           func() time.Time { return fixedNow },
		Warn:          func(s string) { e.warns = append(e.warns, s) },
	}
}

// emitted returns a wrapped skill folder (mockmed-triage).
func emitted(t *testing.T) string {
	t.Helper()
	c := emitCases["mockmed-triage"]
	var warns []string
	res, err := Emit(context.Background(), emitOpts(buildCase(t, c), t.TempDir(), c, &warns))
	if err != nil {
		t.Fatal(err)
	}
	return res.SkillDir
}

func readJSON(t *testing.T, p string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInstallProject(t *testing.T) {
	e := newInstallEnv(t)
	src := emitted(t)
	res, err := Install(e.opts(src, "claude-code", "codex", "goose"))
	if err != nil {
		t.Fatal(err)
	}
	canon := filepath.Join(e.proj, ".agents", "skills", "mockmed-triage")
	want := &InstallResult{Name: "mockmed-triage", Scope: ScopeProject, Canonical: canon, CanonicalKind: KindCopy, Lock: "updated",
		Links: []InstalledLink{
			{"claude-code", filepath.Join(e.proj, ".claude", "skills", "mockmed-triage"), KindSymlink},
			{"goose", filepath.Join(e.proj, ".goose", "skills", "mockmed-triage"), KindSymlink},
		}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Fatalf("result (-want +got):\n%s", diff)
	}
	// The git-root search found proj (a .git file), and links are relative.
	target, _ := os.Readlink(filepath.Join(e.proj, ".claude", "skills", "mockmed-triage"))
	if target != "../../.agents/skills/mockmed-triage" {
		t.Errorf("link target %q", target)
	}
	if fi, err := os.Stat(filepath.Join(canon, "SKILL.md")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("canonical copy: %v %v", fi, err)
	}
	lock := readJSON(t, filepath.Join(e.proj, "skills-lock.json"))
	if lock["version"] != float64(1) {
		t.Errorf("project lock version %v", lock["version"])
	}
	entry := lock["skills"].(map[string]any)["mockmed-triage"].(map[string]any)
	srcHash, err := folderHash(t, src)
	if err != nil || len(srcHash) != 64 {
		t.Fatalf("source hash %q %v", srcHash, err)
	}
	if diff := cmp.Diff(map[string]any{"source": src, "sourceType": "local", "computedHash": srcHash}, entry); diff != "" {
		t.Errorf("lock entry (-want +got):\n%s", diff)
	}
	// Installing again changes nothing.
	res, err = Install(e.opts(src, "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	if res.CanonicalKind != KindUnchanged || res.Links[0].Kind != KindUnchanged {
		t.Errorf("second install: %+v", res)
	}
}

func TestInstallGlobalLock(t *testing.T) {
	e := newInstallEnv(t)
	e.env["XDG_STATE_HOME"] = filepath.Join(e.home, "state")
	e.env["CLAUDE_CONFIG_DIR"] = filepath.Join(e.home, "claude-config")
	lockFile := filepath.Join(e.home, "state", "skills", ".skill-lock.json")
	os.MkdirAll(filepath.Dir(lockFile), 0o755)
	foreign := `{"version":3,"skills":{"other":{"source":"vercel-labs/agent-skills","sourceType":"github","extra":[1,2]}},"dismissed":{"x":true}}`
	os.WriteFile(lockFile, []byte(foreign), 0o644)

	opt := e.opts(emitted(t), "claude-code", "codex-legacy")
	opt.Scope = ScopeGlobal
	e.env["CODEX_HOME"] = filepath.Join(e.home, "codex")
	res, err := Install(opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Canonical != filepath.Join(e.home, ".agents", "skills", "mockmed-triage") {
		t.Errorf("canonical %s", res.Canonical)
	}
	wantLinks := []string{filepath.Join(e.home, "claude-config", "skills", "mockmed-triage"), filepath.Join(e.home, "codex", "skills", "mockmed-triage")}
	for i, l := range res.Links {
		if l.Path != wantLinks[i] || l.Kind != KindSymlink {
			t.Errorf("link %d: %+v", i, l)
		}
	}
	lock := readJSON(t, lockFile)
	skills := lock["skills"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"source": "vercel-labs/agent-skills", "sourceType": "github", "extra": []any{1.0, 2.0}}, skills["other"]); diff != "" {
		t.Errorf("foreign entry changed:\n%s", diff)
	}
	if lock["dismissed"] == nil || lock["version"] != float64(3) {
		t.Errorf("top-level keys lost: %v", lock)
	}
	ours := skills["mockmed-triage"].(map[string]any)
	srcHash, _ := folderHash(t, opt.Source)
	if ours["installedAt"] != "2026-11-30T09:00:00Z" || ours["updatedAt"] != "2026-11-30T09:00:00Z" || ours["skillFolderHash"] != srcHash || len(srcHash) != 64 || ours["sourceType"] != "local" {
		t.Errorf("our entry: %v", ours)
	}
	// installedAt is kept on update.
	fixed := fixedNow
	opt.Now = func() time.Time { return fixed.Add(time.Hour) }
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	ours = readJSON(t, lockFile)["skills"].(map[string]any)["mockmed-triage"].(map[string]any)
	if ours["installedAt"] != "2026-11-30T09:00:00Z" || ours["updatedAt"] != "2026-11-30T10:00:00Z" {
		t.Errorf("after update: %v", ours)
	}
	raw, _ := os.ReadFile(lockFile)
	if !strings.HasPrefix(string(raw), "{\n  \"version\": 3,\n  \"skills\": {\n    \"other\"") {
		t.Errorf("lock not indented by 2 spaces in original key order:\n%s", raw)
	}
}

// TestInstallLockUntouched: a lock file of another version or one that does
// not parse is left byte for byte untouched, with a warning. The choice for
// repeated keys is recorded here too: skills@1.7.4 never writes
// one (JSON.stringify) and would read one as its last value (JSON.parse);
// we refuse such a file at any depth, fail-closed, and the warning names the
// problem and its offset, never the file's content.
func TestInstallLockUntouched(t *testing.T) {
	for name, content := range map[string]string{"version 2": `{"version":2,"skills":{}}`, "not json": `{"version":`,
		"duplicate at the top level": `{"version":1,"skills":{},"skills":{"PLANTED":{}}}`,
		"duplicate in an entry":      `{"version":1,"skills":{"x":{"source":"a","source":"PLANTED"}}}`,
		"duplicate once unescaped":   `{"version":1,"skills":{"x":{},"\u0078":{"PLANTED":1}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newInstallEnv(t)
			lockFile := filepath.Join(e.proj, "skills-lock.json")
			os.WriteFile(lockFile, []byte(content), 0o644)
			res, err := Install(e.opts(emitted(t), "codex"))
			if err != nil {
				t.Fatal(err)
			}
			if data, _ := os.ReadFile(lockFile); string(data) != content || res.Lock != "untouched" {
				t.Errorf("lock changed or not reported untouched: %q %s", data, res.Lock)
			}
			if len(e.warns) == 0 || !strings.Contains(e.warns[len(e.warns)-1], "not updated") {
				t.Errorf("warnings: %v", e.warns)
			}
			if w := e.warns[len(e.warns)-1]; strings.HasPrefix(name, "duplicate") &&
				(!strings.Contains(w, "is not strict JSON (duplicate key at byte ") || !strings.HasSuffix(w, "); not updated") || strings.Contains(w, "PLANTED")) {
				t.Errorf("warning %q", w)
			}
		})
	}
}

func TestInstallConflict(t *testing.T) {
	e := newInstallEnv(t)
	canon := filepath.Join(e.proj, ".agents", "skills", "mockmed-triage")
	os.MkdirAll(canon, 0o755)
	os.WriteFile(filepath.Join(canon, "SKILL.md"), []byte("---\nname: mockmed-triage\ndescription: someone else's\n---\n"), 0o644)
	src := emitted(t)
	_, err := Install(e.opts(src, "claude-code"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "a different skill named mockmed-triage is already installed at") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(e.proj, ".claude")); err == nil {
		t.Error("a refused install created a link")
	}
	if _, err := os.Stat(filepath.Join(e.proj, "skills-lock.json")); err == nil {
		t.Error("a refused install wrote the lock")
	}
	opt := e.opts(src, "claude-code")
	opt.Force = true
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(canon, "SKILL.md")); !strings.Contains(string(data), AppendixMarker) {
		t.Error("--force did not replace the skill")
	}
	// A link occupied by something else is a conflict too.
	e2 := newInstallEnv(t)
	link := filepath.Join(e2.proj, ".claude", "skills", "mockmed-triage")
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.Symlink("/elsewhere", link)
	if _, err := Install(e2.opts(src, "claude-code")); !errors.Is(err, ErrConflict) {
		t.Fatalf("occupied link: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(e2.proj, ".agents", "skills", "mockmed-triage")); err == nil {
		t.Error("a refused install created the canonical copy")
	}
}

func TestInstallSymlinkFailure(t *testing.T) {
	defer func(f func(*fsutil.Root, string, string) error) { testOnlySymlink = f }(testOnlySymlink)
	testOnlySymlink = func(*fsutil.Root, string, string) error { return &os.LinkError{Op: "symlink", Err: os.ErrPermission} }
	e := newInstallEnv(t)
	res, err := Install(e.opts(emitted(t), "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Links[0].Kind != KindCopy {
		t.Errorf("kind %s, want copy", res.Links[0].Kind)
	}
	fi, err := os.Lstat(res.Links[0].Path)
	if err != nil || !fi.IsDir() {
		t.Errorf("no real copy: %v", err)
	}
	if !strings.Contains(strings.Join(e.warns, "\n"), "made a real copy instead") {
		t.Errorf("no note on the copy: %v", e.warns)
	}
}

func TestInstallFromArchive(t *testing.T) {
	e := newInstallEnv(t)
	src := emitted(t)
	archive := filepath.Join(t.TempDir(), "mockmed-triage.skill")
	if _, err := PackFile(src, archive, PackOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Install(e.opts(archive, "claude-code"))
	if err != nil {
		t.Fatal(err)
	}
	// The installed tree equals the folder's (SHA256SUMS is not extracted).
	a, _ := treeHash(src)
	b, _ := treeHash(res.Canonical)
	if a != b {
		t.Error("install from the archive differs from the folder")
	}
	// Installing the folder afterwards is "unchanged".
	res, err = Install(e.opts(src, "claude-code"))
	if err != nil || res.CanonicalKind != KindUnchanged {
		t.Fatalf("%+v %v", res, err)
	}
	// A tampered archive installs nothing.
	e2 := newInstallEnv(t)
	data, _ := os.ReadFile(archive)
	data[len(data)/3] ^= 1
	os.WriteFile(archive, data, 0o644)
	if _, err := Install(e2.opts(archive, "claude-code")); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("tampered archive: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(e2.proj, ".agents", "skills")); len(entries) != 0 {
		t.Errorf("tampered install left %d entries", len(entries))
	}
}

func TestInstallUsage(t *testing.T) {
	e := newInstallEnv(t)
	src := emitted(t)
	for name, opt := range map[string]InstallOptions{
		"no agent":      e.opts(src),
		"unknown agent": e.opts(src, "all"),
		"url":           e.opts("https://example.com/x.skill", "codex"),
		"codex-legacy":  e.opts(src, "codex-legacy"),
	} {
		if _, err := Install(opt); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: err = %v, want ErrUsage", name, err)
		}
	}
	// A tampered inner bundle is a definite failure.
	bad := filepath.Join(t.TempDir(), "mockmed-triage")
	copyFixture(t, src, bad)
	os.RemoveAll(filepath.Join(bad, "bundle"))
	copyFixture(t, filepath.Join(flowVectors, "tampered/template-byte-flipped"), filepath.Join(bad, "bundle"))
	if _, err := Install(e.opts(bad, "codex")); !errors.Is(err, ErrBundle) {
		t.Errorf("tampered bundle: %v", err)
	}
	// A sealed bundle without a key only warns.
	sealed := buildCase(t, emitCases["sealed"])
	opt := e.opts(sealed, "codex")
	opt.BundleOptions = []bundle.Option{bundle.WithoutKey()}
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(e.warns, "\n"), "bundle integrity not checked") {
		t.Errorf("warnings: %v", e.warns)
	}
}

// Our own skill with the same workflow id but a different tree (an older
// emit) is replaced without --force.
func TestInstallReplacesSameWorkflow(t *testing.T) {
	e := newInstallEnv(t)
	src := emitted(t)
	if _, err := Install(e.opts(src, "codex")); err != nil {
		t.Fatal(err)
	}
	canon := filepath.Join(e.proj, ".agents", "skills", "mockmed-triage")
	os.WriteFile(filepath.Join(canon, "notes.txt"), []byte("older emit"), 0o644)
	res, err := Install(e.opts(src, "codex"))
	if err != nil {
		t.Fatal(err)
	}
	if res.CanonicalKind != KindCopy {
		t.Errorf("kind %s, want copy", res.CanonicalKind)
	}
	if _, err := os.Stat(filepath.Join(canon, "notes.txt")); err == nil {
		t.Error("the older tree was not replaced")
	}
	if entries, _ := os.ReadDir(filepath.Dir(canon)); len(entries) != 1 {
		t.Errorf("skills dir holds %d entries, want 1 (no stage left behind)", len(entries))
	}
}

// TestInstallLockHashIsSkillsCLIs: installing the committed fixture records
// the very hash skills@1.7.4 recorded for it, in both scopes; a tree with a
// non-ASCII path records "".
func TestInstallLockHashIsSkillsCLIs(t *testing.T) {
	const want = "73f33c8b9098ba00dbfd640eab46411635292d5b50cf6857bb767dd2800ceb0c"
	e := newInstallEnv(t)
	src := lockFixture(t, "minimal")
	if _, err := Install(e.opts(src, "codex")); err != nil {
		t.Fatal(err)
	}
	if got := readJSON(t, filepath.Join(e.proj, "skills-lock.json"))["skills"].(map[string]any)["minimal"].(map[string]any)["computedHash"]; got != want {
		t.Errorf("project computedHash %v, want %s", got, want)
	}
	opt := e.opts(src, "codex")
	opt.Scope = ScopeGlobal
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	if got := readJSON(t, filepath.Join(e.home, ".agents", ".skill-lock.json"))["skills"].(map[string]any)["minimal"].(map[string]any)["skillFolderHash"]; got != want {
		t.Errorf("global skillFolderHash %v, want %s", got, want)
	}
	os.WriteFile(filepath.Join(src, "notes-é.md"), []byte("x"), 0o644)
	opt.Force = true
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
	if got := readJSON(t, filepath.Join(e.home, ".agents", ".skill-lock.json"))["skills"].(map[string]any)["minimal"].(map[string]any)["skillFolderHash"]; got != "" {
		t.Errorf("non-ASCII tree: skillFolderHash %v, want \"\"", got)
	}
}
