//go:build unix

package skill

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
)

func (e *installEnv) scope(s Scope) ScopeOptions {
	return ScopeOptions{Scope: s, WorkDir: e.work, Getenv: func(k string) string { return e.env[k] },
		Warn: func(m string) { e.warns = append(e.warns, m) }}
}

func (e *installEnv) install(t *testing.T, src string, scope Scope, agents ...string) {
	t.Helper()
	opt := e.opts(src, agents...)
	opt.Scope = scope
	if _, err := Install(opt); err != nil {
		t.Fatal(err)
	}
}

func agentsOf(s ListedSkill) []string {
	var ids []string
	for _, a := range s.Agents {
		ids = append(ids, a.Agent+":"+a.Kind)
	}
	return ids
}

// TestListProject: a skill installed by us is listed with its per-agent
// entries and a lock hash that matches; an edit makes it "differs"; a
// foreign lock entry without a folder is listed with no_folder; the agent
// filter keeps only skills that agent has.
func TestListProject(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "claude-code", "codex")
	res, err := List(ListOptions{ScopeOptions: e.scope(ScopeProject)})
	if err != nil {
		t.Fatal(err)
	}
	canon := filepath.Join(e.proj, ".agents", "skills", "minimal")
	if res.Root != e.proj || res.LockStatus != "ok" || len(res.Skills) != 1 {
		t.Fatalf("result %+v", res)
	}
	s := res.Skills[0]
	want := []string{"amp:shared", "claude-code:symlink", "cline:shared", "codex:shared", "cursor:shared", "gemini-cli:shared", "github-copilot:shared", "opencode:shared"}
	if diff := cmp.Diff(want, agentsOf(s)); diff != "" || s.Folder != canon {
		t.Fatalf("agents (-want +got):\n%s folder %s", diff, s.Folder)
	}
	if s.Lock == nil || s.Lock.HashStatus != HashMatch || s.Lock.Hash != "73f33c8b9098ba00dbfd640eab46411635292d5b50cf6857bb767dd2800ceb0c" || s.Lock.SourceType != "local" {
		t.Fatalf("lock %+v", s.Lock)
	}

	os.WriteFile(filepath.Join(canon, "SKILL.md"), []byte("---\nname: minimal\ndescription: edited\n---\n"), 0o644)
	lock := filepath.Join(e.proj, "skills-lock.json")
	data, _ := os.ReadFile(lock)
	os.WriteFile(lock, []byte(strings.Replace(string(data), `"skills": {`, `"skills": {"gone": {"source": "x/y", "sourceType": "github", "computedHash": "00"},`, 1)), 0o644)
	res, err = List(ListOptions{ScopeOptions: e.scope(ScopeProject)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skills) != 2 || res.Skills[0].Name != "gone" || res.Skills[0].Lock.HashStatus != HashNoFolder || res.Skills[1].Lock.HashStatus != HashDiffers {
		t.Fatalf("after edit: %+v", res.Skills)
	}
	res, err = List(ListOptions{ScopeOptions: e.scope(ScopeProject), Agents: []string{"goose"}})
	if err != nil || len(res.Skills) != 0 {
		t.Fatalf("goose filter: %+v %v", res, err)
	}
	res, err = List(ListOptions{ScopeOptions: e.scope(ScopeProject), Agents: []string{"claude-code"}})
	if err != nil || len(res.Skills) != 1 || res.Skills[0].Name != "minimal" {
		t.Fatalf("claude-code filter: %+v %v", res, err)
	}
	if _, err := List(ListOptions{ScopeOptions: e.scope(ScopeProject), Agents: []string{"nope"}}); !errors.Is(err, ErrUsage) {
		t.Fatalf("unknown agent: %v", err)
	}
}

// TestListGlobalAndNonASCII: global scope reads skillFolderHash from the
// global lock; a copy holding a non-ASCII path is not_computable; an
// entry recorded with "" is not_recorded.
func TestListGlobalAndNonASCII(t *testing.T) {
	e := newInstallEnv(t)
	src := lockFixture(t, "minimal")
	os.WriteFile(filepath.Join(src, "ü.md"), []byte("x"), 0o644)
	e.install(t, src, ScopeGlobal, "claude-code")
	res, err := List(ListOptions{ScopeOptions: e.scope(ScopeGlobal)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skills) != 1 || res.Skills[0].Lock.Hash != "" || res.Skills[0].Lock.HashStatus != HashNotRecorded {
		t.Fatalf("%+v", res.Skills)
	}
	if res.LockFile != filepath.Join(e.home, ".agents", ".skill-lock.json") {
		t.Errorf("lock file %s", res.LockFile)
	}
}

// TestListUnusableLock: a lock file of another version is warned about
// and ignored; the folders are still listed.
func TestListUnusableLock(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "codex")
	os.WriteFile(filepath.Join(e.proj, "skills-lock.json"), []byte(`{"version":7,"skills":{}}`), 0o644)
	res, err := List(ListOptions{ScopeOptions: e.scope(ScopeProject)})
	if err != nil || res.LockStatus != "unusable" || len(res.Skills) != 1 || res.Skills[0].Lock != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if len(e.warns) == 0 || !strings.Contains(e.warns[len(e.warns)-1], "version 7; ignored") {
		t.Fatalf("warnings %v", e.warns)
	}
}

// TestListHostileLock: a lock file that is a symlink, a FIFO or a folder
// is refused (the FIFO without blocking), naming the file.
func TestListHostileLock(t *testing.T) {
	for name, plant := range map[string]func(p string) error{
		"symlink": func(p string) error {
			os.WriteFile(p+".real", []byte(`{"version":1,"skills":{}}`), 0o644)
			return os.Symlink(p+".real", p)
		},
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"folder": func(p string) error { return os.Mkdir(p, 0o755) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newInstallEnv(t)
			p := filepath.Join(e.proj, "skills-lock.json")
			if err := plant(p); err != nil {
				t.Fatal(err)
			}
			_, err := List(ListOptions{ScopeOptions: e.scope(ScopeProject)})
			if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "skills lock file") {
				t.Fatalf("err = %v", err)
			}
			_, err = Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}})
			if !errors.Is(err, ErrUnsafePath) {
				t.Fatalf("remove: err = %v", err)
			}
		})
	}
}

// TestListSymlinkedAgentFolder: an agent folder reached through a link is
// skipped with a warning naming the link, never read.
func TestListSymlinkedAgentFolder(t *testing.T) {
	e := newInstallEnv(t)
	out, unchanged := sentinelDir(t)
	os.Symlink(out, filepath.Join(e.proj, ".claude"))
	res, err := List(ListOptions{ScopeOptions: e.scope(ScopeProject)})
	if err != nil || len(res.Skills) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if !slices.ContainsFunc(e.warns, func(w string) bool { return strings.Contains(w, "symbolic link .claude") }) {
		t.Fatalf("warnings %v", e.warns)
	}
	unchanged()
}

// TestRemoveProject: remove deletes the link, the shared copy and the lock
// entry, keeps other entries, and rewrites the lock in place (the same
// inode, never renamed over: gh's protocol).
func TestRemoveProject(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "claude-code", "goose")
	e.install(t, emitted(t), ScopeProject, "codex")
	lock := filepath.Join(e.proj, "skills-lock.json")
	before, _ := os.Stat(lock)
	var asked *RemoveResult
	res, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"},
		Confirm: func(p *RemoveResult) (bool, error) { asked = p; return true, nil }})
	if err != nil {
		t.Fatal(err)
	}
	canon := filepath.Join(e.proj, ".agents", "skills", "minimal")
	want := []RemovedPath{
		{filepath.Join(e.proj, ".claude", "skills", "minimal"), "symlink"},
		{filepath.Join(e.proj, ".goose", "skills", "minimal"), "symlink"},
		{canon, "folder"},
	}
	if diff := cmp.Diff(want, res.Skills[0].Removed); diff != "" || !res.Skills[0].LockEntry || res.Lock != "updated" {
		t.Fatalf("removed (-want +got):\n%s %+v", diff, res)
	}
	if asked == nil || len(asked.Skills[0].Removed) != 3 {
		t.Fatalf("confirm saw %+v", asked)
	}
	for _, p := range want {
		if _, err := os.Lstat(p.Path); err == nil {
			t.Errorf("%s still there", p.Path)
		}
	}
	skills := readJSON(t, lock)["skills"].(map[string]any)
	if _, ok := skills["minimal"]; ok || skills["mockmed-triage"] == nil {
		t.Fatalf("lock skills %v", skills)
	}
	after, _ := os.Stat(lock)
	if !os.SameFile(before, after) {
		t.Error("the lock file was replaced (a new inode), not rewritten in place")
	}
	if _, err := os.Stat(filepath.Join(e.proj, ".agents", "skills", "mockmed-triage", "SKILL.md")); err != nil {
		t.Error("the other skill was touched")
	}
	// Nothing left to remove: not installed.
	if _, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("second remove: %v", err)
	}
}

// TestRemoveDeclined: a declined confirmation removes nothing.
func TestRemoveDeclined(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "claude-code")
	lock := filepath.Join(e.proj, "skills-lock.json")
	data, _ := os.ReadFile(lock)
	_, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"},
		Confirm: func(*RemoveResult) (bool, error) { return false, nil }})
	if !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Lstat(filepath.Join(e.proj, ".claude", "skills", "minimal")); err != nil {
		t.Error("declined remove deleted the link")
	}
	if now, _ := os.ReadFile(lock); string(now) != string(data) {
		t.Error("declined remove changed the lock")
	}
}

// TestRemoveAgentOnly: -a claude-code removes only Claude Code's link; the
// shared copy (read by codex, cursor, …) and the lock entry stay.
func TestRemoveAgentOnly(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "claude-code", "goose")
	res, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}, Agents: []string{"claude-code"}})
	if err != nil {
		t.Fatal(err)
	}
	canon := filepath.Join(e.proj, ".agents", "skills", "minimal")
	if len(res.Skills[0].Removed) != 1 || res.Skills[0].Kept != canon || res.Skills[0].LockEntry || res.Lock != "unchanged" {
		t.Fatalf("%+v", res.Skills[0])
	}
	if _, err := os.Stat(filepath.Join(canon, "SKILL.md")); err != nil {
		t.Fatal("shared copy removed")
	}
	if _, err := os.Lstat(filepath.Join(e.proj, ".goose", "skills", "minimal")); err != nil {
		t.Fatal("goose link removed")
	}
	if _, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}, Agents: []string{"windsurf"}}); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("windsurf: %v", err)
	}
}

// TestRemoveRefusesSymlinkedAgentFolder: a symlinked .claude or
// .claude/skills (or .agents) pointing out of the project refuses the
// whole removal, naming the link; nothing inside or outside is deleted.
func TestRemoveRefusesSymlinkedAgentFolder(t *testing.T) {
	for _, link := range []string{".claude", ".claude/skills", ".agents", ".agents/skills"} {
		t.Run(link, func(t *testing.T) {
			e := newInstallEnv(t)
			out, unchanged := sentinelDir(t)
			l := filepath.Join(e.proj, filepath.FromSlash(link))
			os.MkdirAll(filepath.Dir(l), 0o755)
			// The outside folder holds <name> at the depth the remove looks.
			target := out
			if link == ".claude" || link == ".agents" {
				os.MkdirAll(filepath.Join(out, "skills"), 0o755)
				os.Symlink(filepath.Join(out, "mockmed-triage"), filepath.Join(out, "skills", "mockmed-triage"))
			}
			os.Symlink(target, l)
			os.WriteFile(filepath.Join(e.proj, "skills-lock.json"), []byte(`{"version":1,"skills":{"mockmed-triage":{"source":"x","sourceType":"local","computedHash":""}}}`), 0o644)
			confirmed := false
			_, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"mockmed-triage"},
				Confirm: func(*RemoveResult) (bool, error) { confirmed = true; return true, nil }})
			if !errors.Is(err, ErrUnsafePath) || !strings.Contains(err.Error(), "through symbolic link "+link) {
				t.Fatalf("err = %v, want a refusal naming %s", err, link)
			}
			if confirmed {
				t.Error("asked for confirmation before refusing")
			}
			if data, _ := os.ReadFile(filepath.Join(e.proj, "skills-lock.json")); !strings.Contains(string(data), "mockmed-triage") {
				t.Error("lock entry removed")
			}
			if link == ".claude" || link == ".agents" {
				os.Remove(filepath.Join(out, "skills", "mockmed-triage"))
				os.Remove(filepath.Join(out, "skills"))
			}
			unchanged()
		})
	}
}

// TestRemoveLinkNotFollowed: a per-skill entry that is a link to a folder
// outside is removed itself; the folder it points to is untouched.
func TestRemoveLinkNotFollowed(t *testing.T) {
	e := newInstallEnv(t)
	out, unchanged := sentinelDir(t)
	l := filepath.Join(e.proj, ".claude", "skills", "mockmed-triage")
	os.MkdirAll(filepath.Dir(l), 0o755)
	os.Symlink(filepath.Join(out, "mockmed-triage"), l)
	res, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"mockmed-triage"}})
	if err != nil || res.Skills[0].Removed[0].Kind != "symlink" {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := os.Lstat(l); err == nil {
		t.Error("link kept")
	}
	unchanged()
}

// TestRemoveBadNames: names that are not one folder name are usage errors.
func TestRemoveBadNames(t *testing.T) {
	e := newInstallEnv(t)
	for _, n := range []string{"", ".", "..", "../x", "a/b", ".hidden", "caf\u00e9", `a\b`} {
		if _, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{n}}); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: err = %v", n, err)
		}
	}
	if _, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject)}); !errors.Is(err, ErrUsage) {
		t.Errorf("no names: %v", err)
	}
}

// TestLockInPlaceWhileWaiting: the lock protocol shared with gh and the
// skills CLI. Another writer holds the flock on the lock file while two
// installs and a remove start; all three wait for it (the 100 ms retries
// run on synctest's clock). Holding it, that writer adds an entry by
// rewriting the file in place through its own handle, then releases it.
// The three then take the flock in turn, so no update is lost (the other
// writer's entry and both installs are there, the removed one is gone),
// the path still names the inode every writer locked (never renamed over),
// and the other writer's still-open handle reads the final document.
func TestLockInPlaceWhileWaiting(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "codex")
	gamma := filepath.Join(t.TempDir(), "gamma")
	os.Mkdir(gamma, 0o755)
	if err := os.WriteFile(filepath.Join(gamma, "SKILL.md"), []byte("---\nname: gamma\ndescription: \"A second skill installed concurrently.\"\n---\nNothing else.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs := []string{lockFixture(t, "order-mix"), gamma}
	lock := filepath.Join(e.proj, "skills-lock.json")
	before, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		waiting := make(chan struct{}, 3)
		testOnlyLockBusy = func() { waiting <- struct{}{} }
		defer func() { testOnlyLockBusy = nil }()
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i, src := range srcs {
			opt := e.opts(src, "codex")
			opt.Warn = func(string) {}
			wg.Go(func() { _, errs[i] = Install(opt) })
		}
		rm := RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}}
		rm.Warn = func(string) {}
		wg.Go(func() { _, errs[2] = Remove(rm) })
		for range errs {
			<-waiting
		}
		// The other writer: read, add "third", rewrite in place.
		data, err := io.ReadAll(io.NewSectionReader(held, 0, 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["skills"].(map[string]any)["third"] = map[string]any{"source": "t", "sourceType": "local", "computedHash": ""}
		data, _ = json.Marshal(doc)
		if err := held.Truncate(0); err != nil {
			t.Fatal(err)
		}
		if _, err := held.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		syscall.Flock(int(held.Fd()), syscall.LOCK_UN)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
		}
	})
	skills := readJSON(t, lock)["skills"].(map[string]any)
	for _, name := range []string{"third", "order-mix", "gamma"} {
		if skills[name] == nil {
			t.Errorf("lost the %s update: %v", name, skills)
		}
	}
	if skills["minimal"] != nil {
		t.Errorf("lost the removal of minimal: %v", skills)
	}
	after, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the lock file was replaced (a new inode), not rewritten in place")
	}
	final, err := io.ReadAll(io.NewSectionReader(held, 0, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(lock); string(final) != string(now) {
		t.Errorf("the other writer's handle reads a stale file:\n%s", final)
	}
}

// TestRemoveForeignLockUntouched: a lock file of another version is left
// byte for byte (warned), while the folders are still removed.
func TestRemoveForeignLockUntouched(t *testing.T) {
	e := newInstallEnv(t)
	e.install(t, lockFixture(t, "minimal"), ScopeProject, "codex")
	lock := filepath.Join(e.proj, "skills-lock.json")
	foreign := `{"version":2,"skills":{"minimal":{}}}`
	os.WriteFile(lock, []byte(foreign), 0o644)
	res, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(lock); string(data) != foreign || res.Lock != "untouched" {
		t.Fatalf("lock %q, result %s", data, res.Lock)
	}
	if len(e.warns) == 0 || !strings.Contains(e.warns[len(e.warns)-1], "version 2; not updated") {
		t.Fatalf("warnings %v", e.warns)
	}
	if _, err := os.Stat(filepath.Join(e.proj, ".agents", "skills", "minimal")); err == nil {
		t.Fatal("copy kept")
	}
}
