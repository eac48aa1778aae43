package skill

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
)

// Scope is where a skill is installed.
type Scope string

const (
	// ScopeProject installs under the nearest ancestor holding .git (else
	// the working directory).
	ScopeProject Scope = "project"
	// ScopeGlobal installs under the home directory.
	ScopeGlobal Scope = "global"
)

// DataBoundaryWarning is printed on every install.
const DataBoundaryWarning = "this skill contains protected workflow data (recorded example values, step intents and the compiled bundle); install it only into agents authorized for the same data boundary as the recording, because every agent that loads it can read it"

// agentLinks maps an agent id to where it reads skills when that is not
// .agents/skills. An empty value means the agent reads .agents/skills.
type agentDirs struct {
	project string                               // relative to the project root; "" none; "-" unsupported
	global  func(env func(string) string) string // absolute folder of skills, "" none
}

func homeJoin(env func(string) string, elem ...string) string {
	return filepath.Join(append([]string{env("HOME")}, elem...)...)
}

var agents = map[string]agentDirs{
	"claude-code": {project: ".claude/skills", global: func(env func(string) string) string {
		if d := env("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, "skills")
		}
		return homeJoin(env, ".claude", "skills")
	}},
	"codex":          {},
	"cursor":         {},
	"github-copilot": {},
	"gemini-cli":     {},
	"opencode":       {},
	"amp":            {},
	"cline":          {},
	"codex-legacy": {project: "-", global: func(env func(string) string) string {
		if d := env("CODEX_HOME"); d != "" {
			return filepath.Join(d, "skills")
		}
		return homeJoin(env, ".codex", "skills")
	}},
	"goose": {project: ".goose/skills", global: func(env func(string) string) string {
		if d := env("XDG_CONFIG_HOME"); d != "" {
			return filepath.Join(d, "goose", "skills")
		}
		return homeJoin(env, ".config", "goose", "skills")
	}},
	"windsurf": {project: ".windsurf/skills", global: func(env func(string) string) string {
		return homeJoin(env, ".codeium", "windsurf", "skills")
	}},
}

// AgentIDs returns the known agent ids, sorted.
func AgentIDs() []string {
	ids := make([]string, 0, len(agents))
	for id := range agents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ErrUsage is returned (wrapped) for install requests that are usage errors:
// an unknown agent id, an agent without a project location, a URL source.
var ErrUsage = errors.New("usage")

// InstallOptions configure [Install].
type InstallOptions struct {
	// Source is a skill folder or a packed skill (.skill/.zip/.tar.zst).
	Source string
	// Agents are agent ids (see [AgentIDs]); at least one.
	Agents []string
	Scope  Scope
	// WorkDir is where the project root search starts (default: the
	// process working directory).
	WorkDir string
	// Getenv reads HOME, XDG_*, CLAUDE_CONFIG_DIR and CODEX_HOME (default
	// os.Getenv).
	Getenv func(string) string
	// Copy makes real copies instead of symlinks.
	Copy bool
	// Force replaces a different skill.
	Force bool
	// NoLock skips the lock file.
	NoLock bool
	// Verify applies to an archive source (digest and limits).
	Verify VerifyOptions
	// BundleOptions are passed to bundle.Load.
	BundleOptions []bundle.Option
	// Now is the clock for the lock file (default time.Now).
	Now func() time.Time
	// Warn receives warnings and notes.
	Warn func(string)
}

// Link kinds in an [InstallResult].
const (
	KindCopy      = "copy"
	KindSymlink   = "symlink"
	KindUnchanged = "unchanged"
)

// InstalledLink is one per-agent location.
type InstalledLink struct {
	Agent string `json:"agent"`
	Path  string `json:"path"`
	Kind  string `json:"kind"`
}

// InstallResult describes an install. Paths are absolute.
type InstallResult struct {
	Name          string          `json:"name"`
	Scope         Scope           `json:"scope"`
	Canonical     string          `json:"canonical"`
	CanonicalKind string          `json:"-"`
	Links         []InstalledLink `json:"links"`
	// Lock is "updated", "skipped" (--no-lock) or "untouched" (foreign
	// version or unreadable lock file).
	Lock string `json:"lock"`
}

// testOnlySymlink lets tests make symlinks fail.
var testOnlySymlink = os.Symlink

// Install installs a skill: a real copy at <root>/.agents/skills/<name>,
// relative per-skill symlinks for agents that read elsewhere, and an entry
// in the skills lock file (spec/skills.md §6). A different skill already in
// a destination is refused ([ErrConflict]) unless Force. Nothing is changed
// when a check fails.
func Install(opt InstallOptions) (*InstallResult, error) {
	getenv := opt.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	if err := CheckInstallRequest(opt.Source, opt.Agents, opt.Scope); err != nil {
		return nil, err
	}
	root, err := installRoot(opt, getenv)
	if err != nil {
		return nil, err
	}
	srcInfo, err := os.Stat(opt.Source)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPath, opt.Source, unwrapPathError(err))
	}
	srcAbs, err := filepath.Abs(opt.Source)
	if err != nil {
		return nil, err
	}
	skillsDir := filepath.Join(root, ".agents", "skills")
	if err := os.MkdirAll(skillsDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(skillsDir, ".openadapt-install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// 1. Stage the source tree as tmp/<name>.
	var name string
	if srcInfo.IsDir() {
		name = filepath.Base(srcAbs)
		if err := os.Mkdir(filepath.Join(tmp, name), 0o755); err != nil {
			return nil, fmt.Errorf("%w: unusable skill folder name", ErrLayout)
		}
		if err := copyTree(srcAbs, filepath.Join(tmp, name)); err != nil {
			return nil, err
		}
	} else {
		res, err := extractArchive(opt.Source, opt.Verify, tmp)
		if err != nil {
			return nil, err
		}
		name = res.Name
	}
	staged := filepath.Join(tmp, name)

	// 2. §1 errors refuse; the inner bundle is checked.
	rep, err := validateDir(staged, name)
	if err != nil {
		return nil, err
	}
	if err := rep.FirstError(); err != nil {
		return nil, err
	}
	if err := checkInnerBundle(staged, opt.BundleOptions, warn); err != nil {
		return nil, err
	}
	stagedHash, err := treeHash(staged)
	if err != nil {
		return nil, err
	}
	stagedID := workflowIDOf(staged)

	// 3. Decide every destination before changing anything.
	res := &InstallResult{Name: name, Scope: opt.Scope, Canonical: filepath.Join(skillsDir, name)}
	canonDecision, err := decide(res.Canonical, name, stagedHash, stagedID, "", opt.Force)
	if err != nil {
		return nil, err
	}
	type linkPlan struct {
		InstalledLink
		decision string
	}
	var plans []linkPlan
	seen := map[string]bool{}
	for _, a := range opt.Agents {
		dir := linkDir(agents[a], opt.Scope, root, getenv)
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if seen[p] || p == res.Canonical {
			continue
		}
		seen[p] = true
		d, err := decide(p, name, stagedHash, stagedID, res.Canonical, opt.Force)
		if err != nil {
			return nil, err
		}
		plans = append(plans, linkPlan{InstalledLink{Agent: a, Path: p}, d})
	}

	// 4. Apply.
	switch canonDecision {
	case KindUnchanged:
		res.CanonicalKind = KindUnchanged
	default:
		if err := publishDir(staged, res.Canonical, canonDecision == "replace"); err != nil {
			return nil, err
		}
		res.CanonicalKind = KindCopy
	}
	for _, pl := range plans {
		l := pl.InstalledLink
		if pl.decision == KindUnchanged {
			l.Kind = KindUnchanged
			res.Links = append(res.Links, l)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
			return nil, err
		}
		if pl.decision == "replace" {
			if err := os.RemoveAll(l.Path); err != nil {
				return nil, err
			}
		}
		kind, err := linkOrCopy(res.Canonical, l.Path, opt.Copy, warn)
		if err != nil {
			return nil, err
		}
		l.Kind = kind
		res.Links = append(res.Links, l)
	}
	if res.Links == nil {
		res.Links = []InstalledLink{}
	}

	// 5. The lock file.
	res.Lock = "skipped"
	if !opt.NoLock {
		res.Lock, err = updateLock(opt.Scope, root, getenv, name, srcAbs, now().UTC(), warn)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// CheckInstallRequest reports the usage errors of an install request
// (wrapping [ErrUsage]) without touching the file system: a URL source, no
// agent, an unknown agent id, an agent without a location in the scope.
func CheckInstallRequest(source string, agentIDs []string, scope Scope) error {
	if strings.Contains(source, "://") {
		return fmt.Errorf("%w: remote sources are not supported; download, verify, then install", ErrUsage)
	}
	if len(agentIDs) == 0 {
		return fmt.Errorf("%w: --agent is required (known: %s)", ErrUsage, strings.Join(AgentIDs(), ", "))
	}
	for _, a := range agentIDs {
		d, ok := agents[a]
		if !ok {
			return fmt.Errorf("%w: unknown agent %q (known: %s)", ErrUsage, a, strings.Join(AgentIDs(), ", "))
		}
		if scope == ScopeProject && d.project == "-" {
			return fmt.Errorf("%w: agent %s has no project location; use --global", ErrUsage, a)
		}
	}
	return nil
}

// installRoot: with project scope the nearest ancestor holding .git (a
// directory or a file), else the working directory; with global, HOME.
func installRoot(opt InstallOptions, getenv func(string) string) (string, error) {
	if opt.Scope == ScopeGlobal {
		h := getenv("HOME")
		if h == "" {
			return "", fmt.Errorf("%w: HOME is not set", ErrUsage)
		}
		return filepath.Abs(h)
	}
	wd := opt.WorkDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	wd, err := filepath.Abs(wd)
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return wd, nil
		}
	}
}

func linkDir(d agentDirs, scope Scope, root string, getenv func(string) string) string {
	if scope == ScopeGlobal {
		if d.global == nil {
			return ""
		}
		return d.global(getenv)
	}
	if d.project == "" || d.project == "-" {
		return ""
	}
	return filepath.Join(root, filepath.FromSlash(d.project))
}

// decide returns "new", "replace" or KindUnchanged for destination p, or an
// ErrConflict. canonical is set for link destinations: a symlink already
// pointing at it is kept.
func decide(p, name, stagedHash, stagedID, canonical string, force bool) (string, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "new", nil
	}
	if err != nil {
		return "", err
	}
	conflict := func() (string, error) {
		if force {
			return "replace", nil
		}
		return "", fmt.Errorf("%w: a different skill named %s is already installed at %s; pass --force to replace it", ErrConflict, name, p)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if canonical != "" {
			if target, err := os.Readlink(p); err == nil {
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(p), target)
				}
				if filepath.Clean(target) == filepath.Clean(canonical) {
					return KindUnchanged, nil
				}
			}
		}
		return conflict()
	}
	if !fi.IsDir() {
		return conflict()
	}
	if h, err := treeHash(p); err == nil && h == stagedHash {
		return KindUnchanged, nil
	}
	if stagedID != "" && workflowIDOf(p) == stagedID {
		return "replace", nil
	}
	return conflict()
}

// treeHash is the h1: digest of a folder's file listing.
func treeHash(dir string) (string, error) {
	l, err := listing(dir)
	if err != nil {
		return "", err
	}
	return TreeDigest(l), nil
}

// publishDir renames src to final; with replace, the old final is moved
// aside first and removed only after the new one is in place (and moved
// back if the second rename fails).
func publishDir(src, final string, replace bool) error {
	if replace {
		old := final + ".openadapt-old"
		os.RemoveAll(old)
		if err := os.Rename(final, old); err != nil {
			return err
		}
		if err := os.Rename(src, final); err != nil {
			os.Rename(old, final)
			return err
		}
		return os.RemoveAll(old)
	}
	return os.Rename(src, final)
}

// linkOrCopy creates a relative symlink at p pointing at canonical, or a
// real copy when asked or when the symlink fails (Windows, EPERM).
func linkOrCopy(canonical, p string, forceCopy bool, warn func(string)) (string, error) {
	if !forceCopy {
		rel, err := filepath.Rel(filepath.Dir(p), canonical)
		if err == nil {
			if err = testOnlySymlink(rel, p); err == nil {
				return KindSymlink, nil
			}
		}
		warn(fmt.Sprintf("could not create a symlink at %s; made a real copy instead", p))
	}
	tmp, err := os.MkdirTemp(filepath.Dir(p), ".openadapt-copy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, "tree")
	if err := os.Mkdir(dst, 0o755); err != nil {
		return "", err
	}
	if err := copyTree(canonical, dst); err != nil {
		return "", err
	}
	if err := os.Rename(dst, p); err != nil {
		return "", err
	}
	return KindCopy, nil
}

// checkInnerBundle verifies bundle/ when present: a definite failure
// refuses; a sealed bundle without a key only warns.
func checkInnerBundle(dir string, opts []bundle.Option, warn func(string)) error {
	bdir := filepath.Join(dir, "bundle")
	if fi, err := os.Lstat(bdir); err != nil || !fi.IsDir() {
		return nil
	}
	b, err := bundle.Load(bdir, opts...)
	if b == nil {
		return &bundleError{msg: fmt.Sprintf("bundle cannot be loaded: %v", err), err: err}
	}
	switch {
	case b.Integrity == bundle.Verified:
	case b.Integrity == bundle.LegacyUnverified:
		warn("bundle is legacy_unverified: it is not integrity-checked")
	case b.ErrorKind == bundle.KindMissingKey:
		warn("bundle integrity not checked: it is sealed and OPENADAPT_BUNDLE_KEY is not set")
	default:
		return &bundleError{msg: fmt.Sprintf("bundle failed verification (%s)", b.ErrorKind), err: b.Err}
	}
	return nil
}

// extractArchive verifies an archive (§5) while extracting it into
// dir/<name> through an os.Root, so no write can escape dir. SHA256SUMS is
// checked but not extracted: it describes the archive, and leaving it out
// keeps an install from an archive identical to one from the folder.
func extractArchive(file string, vo VerifyOptions, dir string) (*VerifyResult, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	sk := func(top, rel string, isDir bool, mode fs.FileMode, src io.Reader) error {
		p := filepath.Join(top, filepath.FromSlash(rel))
		if err := r.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if isDir {
			return r.MkdirAll(p, 0o755)
		}
		f, err := r.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, src); err != nil {
			f.Close()
			return err
		}
		if err := f.Chmod(mode); err != nil { // umask-independent
			f.Close()
			return err
		}
		return f.Close()
	}
	return readSkillArchive(file, vo, sk)
}
