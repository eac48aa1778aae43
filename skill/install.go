package skill

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
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

// agentDirs says where an agent reads skills when that is not
// .agents/skills.
type agentDirs struct {
	project string                                // relative to the project root; "" none; "-" unsupported
	global  func(env func(string) string) rootRel // the agent folder (its own root) and the skills folder in it; zero: none
}

// rootRel is a folder beneath a root folder. The root folder's own path is
// the user's choice (the project, $CLAUDE_CONFIG_DIR, …) and may be reached
// through links; beneath it nothing is followed (internal/util/fsutil).
type rootRel struct {
	root  string // absolute root folder
	label string // how messages name the root ("" for the project root)
	rel   string // slash path beneath root
}

func (r rootRel) abs() string { return filepath.Join(r.root, filepath.FromSlash(r.rel)) }

func homeRoot(env func(string) string, label string, elem ...string) rootRel {
	return rootRel{root: filepath.Join(append([]string{env("HOME")}, elem...)...), label: label, rel: "skills"}
}

var agents = map[string]agentDirs{
	"claude-code": {project: ".claude/skills", global: func(env func(string) string) rootRel {
		if d := env("CLAUDE_CONFIG_DIR"); d != "" {
			return rootRel{root: d, label: "$CLAUDE_CONFIG_DIR", rel: "skills"}
		}
		return homeRoot(env, "~/.claude", ".claude")
	}},
	"codex":          {},
	"cursor":         {},
	"github-copilot": {},
	"gemini-cli":     {},
	"opencode":       {},
	"amp":            {},
	"cline":          {},
	"codex-legacy": {project: "-", global: func(env func(string) string) rootRel {
		if d := env("CODEX_HOME"); d != "" {
			return rootRel{root: d, label: "$CODEX_HOME", rel: "skills"}
		}
		return homeRoot(env, "~/.codex", ".codex")
	}},
	"goose": {project: ".goose/skills", global: func(env func(string) string) rootRel {
		if d := env("XDG_CONFIG_HOME"); d != "" {
			return rootRel{root: filepath.Join(d, "goose"), label: "$XDG_CONFIG_HOME/goose", rel: "skills"}
		}
		return homeRoot(env, "~/.config/goose", ".config", "goose")
	}},
	"windsurf": {project: ".windsurf/skills", global: func(env func(string) string) rootRel {
		return homeRoot(env, "~/.codeium/windsurf", ".codeium", "windsurf")
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
	// Context cancels the install (SIGINT/SIGTERM); the staging folder is
	// removed. Default context.Background().
	Context context.Context
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
var testOnlySymlink = func(r *fsutil.Root, target, rel string) error { return r.Symlink(target, rel) }

// testOnlyStaged, when set, runs once the source is staged (tests use it
// to cancel mid-install).
var testOnlyStaged func()

// ErrUnsafePath is returned (wrapped) when a write would go through a
// symbolic link beneath an install root (the message names the link), or
// when the lock file is a link, a folder or not a regular file.
var ErrUnsafePath = errors.New("unsafe path")

// roots opens each root folder once.
type roots map[string]*fsutil.Root

func (rs roots) open(rr rootRel, create bool) (*fsutil.Root, error) {
	if r, ok := rs[rr.root]; ok {
		return r, nil
	}
	if create {
		if err := os.MkdirAll(rr.root, 0o755); err != nil {
			return nil, err
		}
	}
	r, err := fsutil.OpenRoot(rr.root, rr.label)
	if err != nil {
		return nil, err
	}
	rs[rr.root] = r
	return r, nil
}

func (rs roots) close() {
	for _, r := range rs {
		r.Close()
	}
}

// unsafePath wraps a refusal to go through a link, or to rewrite a file
// that is not this user's own, as [ErrUnsafePath].
func unsafePath(err error) error {
	if errors.Is(err, fsutil.ErrSymlink) || errors.Is(err, fsutil.ErrNotRegular) || errors.Is(err, fsutil.ErrNotDir) || errors.Is(err, fsutil.ErrNotOurs) {
		return fmt.Errorf("%w: %w", ErrUnsafePath, err)
	}
	return err
}

// Install installs a skill: a real copy at <root>/.agents/skills/<name>,
// relative per-skill symlinks for agents that read elsewhere, and an entry
// in the skills lock file (docs/skills.md, Install). A different skill already in
// a destination is refused ([ErrConflict]) unless Force. Nothing is changed
// when a check fails.
//
// Every write, rename and delete goes through [fsutil.Root]: a symbolic
// link beneath a root (.agents, .claude/skills, …) is refused with an error
// wrapping [ErrUnsafePath] that names it, never followed. Force replaces
// only the final entry (a link there is removed itself, its target kept).
// The lock file is opened without following a link, before anything is
// installed; a link, folder, FIFO or device there is refused. Each agent
// folder ($CLAUDE_CONFIG_DIR, $CODEX_HOME, ~/.claude, the global lock's
// folder) is its own root. Canceling opt.Context stops the install and
// removes the staging folder.
func Install(opt InstallOptions) (res *InstallResult, err error) {
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
	ctx := opt.Context
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() { err = unsafePath(err) }()
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
	rs := roots{}
	defer rs.close()

	// 0. The lock file first: a link, folder or special file there refuses
	// the install before anything is written. The flock is held to the end,
	// so concurrent installs serialise.
	var lk *lockHandle
	if !opt.NoLock {
		if lk, err = openLock(ctx, rs, lockPath(opt.Scope, root, getenv)); err != nil {
			return nil, err
		}
		defer lk.close()
	}

	canonRR := canonicalDir(opt.Scope, root, getenv)
	// Refuse a link beneath any destination's root before writing anything.
	for _, d := range destinationDirs(opt, root, getenv) {
		if _, err := os.Stat(d.root); errors.Is(err, fs.ErrNotExist) {
			continue // made later, with nothing beneath it yet
		}
		r, err := rs.open(d, false)
		if err != nil {
			return nil, err
		}
		if err := r.CheckDir(d.rel); err != nil {
			return nil, err
		}
	}
	cr, err := rs.open(canonRR, opt.Scope == ScopeGlobal)
	if err != nil {
		return nil, err
	}
	if err := cr.MkdirAll(canonRR.rel, 0o755); err != nil {
		return nil, err
	}
	tmp, err := cr.MkdirTemp(canonRR.rel, ".openadapt-install-")
	if err != nil {
		return nil, err
	}
	defer cr.RemoveAll(tmp)

	// 1. Stage the source tree as tmp/<name>.
	var name string
	if srcInfo.IsDir() {
		name = filepath.Base(srcAbs)
		if err := cr.Mkdir(tmp+"/"+name, 0o755); err != nil {
			return nil, fmt.Errorf("%w: unusable skill folder name", ErrLayout)
		}
		if err := copyTree(ctx, srcAbs, cr, tmp+"/"+name); err != nil {
			return nil, err
		}
	} else {
		vo := opt.Verify
		if vo.Context == nil {
			vo.Context = ctx
		}
		res, err := extractArchive(opt.Source, vo, cr, tmp)
		if err != nil {
			return nil, err
		}
		name = res.Name
	}
	if testOnlyStaged != nil {
		testOnlyStaged()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	staged := cr.Join(tmp + "/" + name)

	// 2. Skill-rule errors refuse; the inner bundle is checked.
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
	// The lock file's folder hash, as the skills CLI computes it over what
	// it installs (FolderHash); "" for a tree it cannot be reproduced for.
	var lockHash string
	if lk != nil {
		if lockHash, err = FolderHash(ctx, cr, tmp+"/"+name); err != nil {
			return nil, err
		}
	}

	// 3. Decide every destination before changing anything.
	canon := rootRel{root: canonRR.root, label: canonRR.label, rel: canonRR.rel + "/" + name}
	res = &InstallResult{Name: name, Scope: opt.Scope, Canonical: canon.abs()}
	canonDecision, err := decide(cr, canon, name, stagedHash, stagedID, "", opt.Force)
	if err != nil {
		return nil, err
	}
	type linkPlan struct {
		InstalledLink
		at       rootRel
		r        *fsutil.Root
		decision string
	}
	var plans []linkPlan
	seen := map[string]bool{}
	for _, a := range opt.Agents {
		dir, ok := linkDir(agents[a], opt.Scope, root, getenv)
		if !ok {
			continue
		}
		at := rootRel{root: dir.root, label: dir.label, rel: dir.rel + "/" + name}
		p := at.abs()
		if seen[p] || p == res.Canonical {
			continue
		}
		seen[p] = true
		lr, err := rs.open(at, opt.Scope == ScopeGlobal)
		if err != nil {
			return nil, err
		}
		d, err := decide(lr, at, name, stagedHash, stagedID, res.Canonical, opt.Force)
		if err != nil {
			return nil, err
		}
		// A link's folder must be reachable without a link before anything
		// is installed.
		if _, err := lr.Lstat(dir.rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		plans = append(plans, linkPlan{InstalledLink{Agent: a, Path: p}, at, lr, d})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 4. Apply.
	switch canonDecision {
	case KindUnchanged:
		res.CanonicalKind = KindUnchanged
	default:
		if err := publishDir(cr, tmp+"/"+name, canon.rel, canonDecision == "replace"); err != nil {
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
		parent, _ := path.Split(pl.at.rel)
		if err := pl.r.MkdirAll(strings.TrimSuffix(parent, "/"), 0o755); err != nil {
			return nil, err
		}
		if pl.decision == "replace" {
			if err := pl.r.RemoveAll(pl.at.rel); err != nil {
				return nil, err
			}
		}
		kind, err := linkOrCopy(ctx, res.Canonical, pl.r, pl.at, opt.Copy, warn)
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
	if lk != nil {
		res.Lock, err = updateLock(lk, opt.Scope, name, srcAbs, lockHash, now().UTC(), warn)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// destinationDirs are the folders an install writes into: the canonical
// one and each agent's.
func destinationDirs(opt InstallOptions, root string, getenv func(string) string) []rootRel {
	ds := []rootRel{canonicalDir(opt.Scope, root, getenv)}
	for _, a := range opt.Agents {
		if d, ok := linkDir(agents[a], opt.Scope, root, getenv); ok {
			ds = append(ds, d)
		}
	}
	return ds
}

// canonicalDir is the folder holding the real copies: <project>/.agents/skills,
// or ~/.agents/skills (~/.agents its own root).
func canonicalDir(scope Scope, root string, getenv func(string) string) rootRel {
	if scope == ScopeGlobal {
		return rootRel{root: filepath.Join(root, ".agents"), label: "~/.agents", rel: "skills"}
	}
	return rootRel{root: root, rel: ".agents/skills"}
}

// unknownAgent is the usage error for an agent id that is not known.
func unknownAgent(id string) error {
	return fmt.Errorf("%w: unknown agent %q (known: %s)", ErrUsage, id, strings.Join(AgentIDs(), ", "))
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
			return unknownAgent(a)
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

func linkDir(d agentDirs, scope Scope, root string, getenv func(string) string) (rootRel, bool) {
	if scope == ScopeGlobal {
		if d.global == nil {
			return rootRel{}, false
		}
		return d.global(getenv), true
	}
	if d.project == "" || d.project == "-" {
		return rootRel{}, false
	}
	return rootRel{root: root, rel: d.project}, true
}

// decide returns "new", "replace" or KindUnchanged for destination at, or an
// ErrConflict. canonical is set for link destinations: a symlink already
// pointing at it is kept. Nothing beneath at's root is followed: a link
// among at's parents is refused here, before anything is installed.
func decide(r *fsutil.Root, at rootRel, name, stagedHash, stagedID, canonical string, force bool) (string, error) {
	p := at.abs()
	fi, err := r.Lstat(at.rel)
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
			if target, err := r.Readlink(at.rel); err == nil {
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

// publishDir renames src to final (both beneath r); with replace, the old
// final entry (folder, file or link: a link is moved, never followed) is
// moved aside first and removed only after the new one is in place (and
// moved back if the second rename fails).
func publishDir(r *fsutil.Root, src, final string, replace bool) error {
	if err := r.Chmod(src, 0o755); err != nil {
		return err
	}
	if replace {
		old := final + ".openadapt-old"
		r.RemoveAll(old)
		if err := r.Rename(final, old); err != nil {
			return err
		}
		if err := r.Rename(src, final); err != nil {
			r.Rename(old, final)
			return err
		}
		return r.RemoveAll(old)
	}
	return r.Rename(src, final)
}

// linkOrCopy creates a relative symlink at at pointing at canonical, or a
// real copy when asked or when the symlink fails (Windows, EPERM).
func linkOrCopy(ctx context.Context, canonical string, r *fsutil.Root, at rootRel, forceCopy bool, warn func(string)) (string, error) {
	p := at.abs()
	if !forceCopy {
		rel, err := filepath.Rel(filepath.Dir(p), canonical)
		if err == nil {
			if err = testOnlySymlink(r, rel, at.rel); err == nil {
				return KindSymlink, nil
			}
			if errors.Is(err, fsutil.ErrSymlink) {
				return "", err
			}
		}
		warn(fmt.Sprintf("could not create a symlink at %s; made a real copy instead", p))
	}
	parent, _ := path.Split(at.rel)
	tmp, err := r.MkdirTemp(strings.TrimSuffix(parent, "/"), ".openadapt-copy-")
	if err != nil {
		return "", err
	}
	defer r.RemoveAll(tmp)
	dst := tmp + "/tree"
	if err := r.Mkdir(dst, 0o755); err != nil {
		return "", err
	}
	if err := copyTree(ctx, canonical, r, dst); err != nil {
		return "", err
	}
	if err := r.Rename(dst, at.rel); err != nil {
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

// extractArchive verifies an archive (docs/skills.md, Verify) while
// extracting it into
// dir/<name> beneath r, so no write can escape dir or go through a link.
// SHA256SUMS is checked but not extracted: it describes the archive, and
// leaving it out keeps an install from an archive identical to one from the
// folder.
func extractArchive(file string, vo VerifyOptions, r *fsutil.Root, dir string) (*VerifyResult, error) {
	sk := func(top, rel string, isDir bool, mode fs.FileMode, src io.Reader) error {
		p := dir + "/" + top + "/" + rel
		parent, _ := path.Split(p)
		if err := r.MkdirAll(strings.TrimSuffix(parent, "/"), 0o755); err != nil {
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
