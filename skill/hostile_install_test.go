//go:build unix

package skill

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sentinelDir is a folder outside every root, with one file, and a check
// that it is unchanged.
func sentinelDir(t *testing.T) (string, func()) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "mockmed-triage"), 0o755)
	os.WriteFile(filepath.Join(dir, "mockmed-triage", "SKILL.md"), []byte("not ours"), 0o644)
	return dir, func() {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "mockmed-triage", "SKILL.md"))
		if err != nil || string(b) != "not ours" {
			t.Fatalf("outside folder changed: %q %v", b, err)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("outside folder gained entries: %d", len(ents))
		}
	}
}

// nothingInstalled fails if the project holds an install, a stage folder
// or a lock file.
func nothingInstalled(t *testing.T, proj string) {
	t.Helper()
	filepath.WalkDir(proj, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		b := d.Name()
		if strings.HasPrefix(b, ".openadapt-") || b == "mockmed-triage" || b == "skills-lock.json" && d.Type().IsRegular() {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

func wantUnsafe(t *testing.T, err error, link string) {
	t.Helper()
	if !errors.Is(err, ErrUnsafePath) {
		t.Fatalf("err = %v, want ErrUnsafePath", err)
	}
	if link != "" && !strings.Contains(err.Error(), "refusing to write through symbolic link "+link) {
		t.Fatalf("err = %q, want it to name the link %s", err, link)
	}
}

// TestInstallRefusesSymlinkedAncestor: a symlinked .claude/skills or
// .agents pointing out of the project is refused, naming the link, with
// and without --force; the folder outside is untouched (before, --force
// deleted outside/<name> and replaced it with a link).
func TestInstallRefusesSymlinkedAncestor(t *testing.T) {
	src := emitted(t)
	for _, tc := range []struct{ link, agent string }{
		{".claude/skills", "claude-code"},
		{".claude", "claude-code"},
		{".agents/skills", "codex"},
		{".agents", "codex"},
		{".goose/skills", "goose"},
	} {
		for _, force := range []bool{false, true} {
			t.Run(tc.link+map[bool]string{true: "/force"}[force], func(t *testing.T) {
				out, unchanged := sentinelDir(t)
				e := newInstallEnv(t)
				l := filepath.Join(e.proj, filepath.FromSlash(tc.link))
				os.MkdirAll(filepath.Dir(l), 0o755)
				if err := os.Symlink(out, l); err != nil {
					t.Fatal(err)
				}
				opt := e.opts(src, tc.agent)
				opt.Force = force
				_, err := Install(opt)
				wantUnsafe(t, err, filepath.FromSlash(tc.link))
				unchanged()
				nothingInstalled(t, e.proj)
			})
		}
	}
}

// TestInstallForceReplacesFinalLinkOnly: with --force, a final entry that
// is a link to a folder outside is replaced; the folder it pointed at stays.
func TestInstallForceReplacesFinalLinkOnly(t *testing.T) {
	out, unchanged := sentinelDir(t)
	e := newInstallEnv(t)
	os.MkdirAll(filepath.Join(e.proj, ".claude", "skills"), 0o755)
	link := filepath.Join(e.proj, ".claude", "skills", "mockmed-triage")
	os.Symlink(filepath.Join(out, "mockmed-triage"), link)
	opt := e.opts(emitted(t), "claude-code")
	if _, err := Install(opt); !errors.Is(err, ErrConflict) {
		t.Fatalf("without --force: %v", err)
	}
	opt.Force = true
	res, err := Install(opt)
	if err != nil {
		t.Fatal(err)
	}
	unchanged()
	target, err := os.Readlink(link)
	if err != nil || filepath.Join(filepath.Dir(link), target) != res.Canonical {
		t.Fatalf("link now %q %v", target, err)
	}
}

// TestInstallGlobalAgentFolderRoots: $CLAUDE_CONFIG_DIR is its own root:
// the folder itself may be a link (the user's choice), a link beneath it
// is refused naming $CLAUDE_CONFIG_DIR/skills.
func TestInstallGlobalAgentFolderRoots(t *testing.T) {
	src := emitted(t)
	out, unchanged := sentinelDir(t)
	e := newInstallEnv(t)
	real := filepath.Join(e.home, "dotfiles", "claude")
	os.MkdirAll(real, 0o755)
	os.Symlink(real, filepath.Join(e.home, "claude-link"))
	e.env["CLAUDE_CONFIG_DIR"] = filepath.Join(e.home, "claude-link")
	opt := e.opts(src, "claude-code")
	opt.Scope = ScopeGlobal
	if _, err := Install(opt); err != nil {
		t.Fatalf("a linked agent folder itself: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(real, "skills", "mockmed-triage")); err != nil {
		t.Fatal(err)
	}
	e2 := newInstallEnv(t)
	os.MkdirAll(filepath.Join(e2.home, "cc"), 0o755)
	os.Symlink(out, filepath.Join(e2.home, "cc", "skills"))
	e2.env["CLAUDE_CONFIG_DIR"] = filepath.Join(e2.home, "cc")
	opt = e2.opts(src, "claude-code")
	opt.Scope = ScopeGlobal
	opt.Force = true
	_, err := Install(opt)
	wantUnsafe(t, err, filepath.Join("$CLAUDE_CONFIG_DIR", "skills"))
	unchanged()
	if _, err := os.Lstat(filepath.Join(e2.home, ".agents", "skills", "mockmed-triage")); err == nil {
		t.Error("canonical copy installed although a link destination was refused")
	}
}

// TestInstallRefusesHostileLockFile: a lock file that is a link (to a file
// outside, or dangling), a FIFO or a folder is refused before anything is
// installed, and the FIFO does not hang the install (before, O_CREATE
// through the link created or overwrote the target, and a FIFO blocked).
func TestInstallRefusesHostileLockFile(t *testing.T) {
	src := emitted(t)
	outFile := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outFile, []byte("precious"), 0o600)
	dangling := filepath.Join(t.TempDir(), "created-by-install")
	cases := map[string]func(p string) error{
		"link":     func(p string) error { return os.Symlink(outFile, p) },
		"dangling": func(p string) error { return os.Symlink(dangling, p) },
		"fifo":     func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"folder":   func(p string) error { return os.Mkdir(p, 0o755) },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			e := newInstallEnv(t)
			if err := mk(filepath.Join(e.proj, "skills-lock.json")); err != nil {
				t.Fatal(err)
			}
			_, err := Install(e.opts(src, "claude-code"))
			wantUnsafe(t, err, "")
			if !strings.Contains(err.Error(), "lock file") {
				t.Errorf("err %q does not say lock file", err)
			}
			nothingInstalled(t, e.proj)
			if b, _ := os.ReadFile(outFile); string(b) != "precious" {
				t.Error("link target changed")
			}
			if _, err := os.Lstat(dangling); err == nil {
				t.Error("dangling link target created")
			}
		})
	}
	// --no-lock does not touch the lock file at all.
	e := newInstallEnv(t)
	syscall.Mkfifo(filepath.Join(e.proj, "skills-lock.json"), 0o644)
	opt := e.opts(src, "claude-code")
	opt.NoLock = true
	if _, err := Install(opt); err != nil {
		t.Fatalf("--no-lock with a FIFO lock: %v", err)
	}
	// The global lock's folder is its own root: a link as the lock file is
	// refused there too.
	e = newInstallEnv(t)
	e.env["XDG_STATE_HOME"] = filepath.Join(e.home, "state")
	os.MkdirAll(filepath.Join(e.home, "state", "skills"), 0o755)
	os.Symlink(outFile, filepath.Join(e.home, "state", "skills", ".skill-lock.json"))
	opt = e.opts(src, "codex")
	opt.Scope = ScopeGlobal
	_, err := Install(opt)
	wantUnsafe(t, err, filepath.Join("$XDG_STATE_HOME/skills", ".skill-lock.json"))
}

// TestInstallCanceledLeavesNoStage: a cancellation (SIGINT/SIGTERM in the
// CLI) once the source is staged stops the install and removes the stage.
func TestInstallCanceledLeavesNoStage(t *testing.T) {
	src := emitted(t)
	archive := filepath.Join(t.TempDir(), "mockmed-triage.skill")
	if _, err := PackFile(src, archive, PackOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{src, archive} {
		e := newInstallEnv(t)
		ctx, cancel := context.WithCancel(context.Background())
		testOnlyStaged = cancel
		opt := e.opts(s, "claude-code")
		opt.Context = ctx
		_, err := Install(opt)
		testOnlyStaged = nil
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v", s, err)
		}
		nothingInstalled(t, e.proj)
	}
}

// TestLockRefusesNotOurs: the skills lock is rewritten in place, so a lock
// file that is a hard link to a file elsewhere, writable by other users or
// owned by another user is refused before anything is installed or removed,
// with an error naming the file and the fix; the file elsewhere is
// unchanged (before, install and remove rewrote it through the link).
func TestLockRefusesNotOurs(t *testing.T) {
	src := emitted(t)
	type plant func(t *testing.T, lock string) (check func())
	hardLink := func(t *testing.T, lock string) func() {
		victim := filepath.Join(t.TempDir(), "victim.json")
		const precious = `{"version":1,"skills":{}}` + "\n"
		os.WriteFile(victim, []byte(precious), 0o644)
		if err := os.Link(victim, lock); err != nil {
			t.Skip("hard links:", err)
		}
		return func() {
			if b, _ := os.ReadFile(victim); string(b) != precious {
				t.Errorf("the linked file changed: %q", b)
			}
		}
	}
	writable := func(t *testing.T, lock string) func() {
		os.WriteFile(lock, []byte(`{"version":1,"skills":{}}`), 0o644)
		os.Chmod(lock, 0o666)
		return func() {}
	}
	foreign := func(t *testing.T, lock string) func() {
		if os.Geteuid() != 0 {
			t.Skip("a file of another user needs root")
		}
		os.WriteFile(lock, []byte(`{"version":1,"skills":{}}`), 0o644)
		os.Chown(lock, 4242, 4242)
		return func() {}
	}
	for name, tc := range map[string]struct {
		plant plant
		fix   string
	}{
		"hard link": {hardLink, "break the link"},
		"writable":  {writable, "chmod go-w"},
		"foreign":   {foreign, "move it aside"},
	} {
		t.Run(name+"/project install", func(t *testing.T) {
			e := newInstallEnv(t)
			lock := filepath.Join(e.proj, "skills-lock.json")
			check := tc.plant(t, lock)
			_, err := Install(e.opts(src, "claude-code"))
			wantUnsafe(t, err, "")
			if !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), tc.fix) {
				t.Errorf("err %q names neither %s nor the fix", err, lock)
			}
			os.Remove(lock) // planted by the test; nothing else may be there
			nothingInstalled(t, e.proj)
			check()
		})
		t.Run(name+"/global install", func(t *testing.T) {
			e := newInstallEnv(t)
			os.MkdirAll(filepath.Join(e.home, ".agents"), 0o755)
			lock := filepath.Join(e.home, ".agents", ".skill-lock.json")
			check := tc.plant(t, lock)
			opt := e.opts(src, "codex")
			opt.Scope = ScopeGlobal
			_, err := Install(opt)
			wantUnsafe(t, err, "")
			if !strings.Contains(err.Error(), ".skill-lock.json") || !strings.Contains(err.Error(), tc.fix) {
				t.Errorf("err %q names neither the lock nor the fix", err)
			}
			check()
		})
		t.Run(name+"/remove", func(t *testing.T) {
			e := newInstallEnv(t)
			e.install(t, lockFixture(t, "minimal"), ScopeProject, "codex")
			lock := filepath.Join(e.proj, "skills-lock.json")
			os.Remove(lock)
			check := tc.plant(t, lock)
			_, err := Remove(RemoveOptions{ScopeOptions: e.scope(ScopeProject), Names: []string{"minimal"}})
			wantUnsafe(t, err, "")
			if !strings.Contains(err.Error(), lock) {
				t.Errorf("err %q does not name %s", err, lock)
			}
			if _, err := os.Stat(filepath.Join(e.proj, ".agents", "skills", "minimal")); err != nil {
				t.Error("the skill was removed although the lock was refused")
			}
			check()
		})
	}
}
