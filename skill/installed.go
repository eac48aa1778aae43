package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// ErrNotInstalled: no installed skill matches a name given to [Remove].
var ErrNotInstalled = errors.New("not installed")

// ErrNotConfirmed: a removal was declined at the confirmation prompt.
var ErrNotConfirmed = errors.New("removal not confirmed; nothing was removed")

// Where a skill is installed for an agent, in [ListedAgent.Kind].
const (
	// KindShared: the agent reads the real copy in .agents/skills itself.
	KindShared = "shared"
	// KindForeignLink: the agent's entry is a symlink to somewhere other
	// than the real copy.
	KindForeignLink = "foreign-symlink"
)

// Hash states in [ListedLock.HashStatus].
const (
	HashMatch         = "match"          // the folder hashes to the recorded value
	HashDiffers       = "differs"        // it hashes to something else (edited, or another skill)
	HashNotRecorded   = "not_recorded"   // the entry records no hash
	HashNotComputable = "not_computable" // a non-ASCII path (FolderHash returns "")
	HashNoFolder      = "no_folder"      // the skill has no real folder in this scope
)

// ScopeOptions locate a scope: the project (the nearest ancestor holding
// .git, else WorkDir) or the home directory.
type ScopeOptions struct {
	Scope   Scope
	WorkDir string              // default: the process working directory
	Getenv  func(string) string // default os.Getenv
	Context context.Context     // default context.Background()
	Warn    func(string)
}

func (o *ScopeOptions) defaults() {
	if o.Scope == "" {
		o.Scope = ScopeProject
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if o.Warn == nil {
		o.Warn = func(string) {}
	}
}

// ListOptions configure [List].
type ListOptions struct {
	ScopeOptions
	// Agents keeps only skills installed for one of these agent ids (all
	// when empty).
	Agents []string
}

// ListedAgent is one agent that has a skill.
type ListedAgent struct {
	Agent string `json:"agent"`
	Path  string `json:"path"`
	// Kind: KindShared, KindSymlink (to the real copy), KindCopy (a real
	// folder of its own), or KindForeignLink.
	Kind string `json:"kind"`
}

// ListedLock is a skill's entry in the skills lock file.
type ListedLock struct {
	Source     string `json:"source"`
	SourceType string `json:"source_type"`
	// Hash is the recorded computedHash (project) or skillFolderHash
	// (global); HashStatus compares it with [FolderHash] of the folder.
	Hash       string `json:"hash"`
	HashStatus string `json:"hash_status"`
}

// ListedSkill is one installed skill.
type ListedSkill struct {
	Name string `json:"name"`
	// Folder is the real folder that was hashed: the copy in .agents/skills,
	// else an agent's own copy; "" when there is none.
	Folder string        `json:"folder"`
	Agents []ListedAgent `json:"agents"`
	// Lock is nil when the lock file has no entry for the skill.
	Lock *ListedLock `json:"lock"`
}

// ListResult is what [List] found.
type ListResult struct {
	Scope    Scope  `json:"scope"`
	Root     string `json:"root"`
	LockFile string `json:"lock_file"`
	// LockStatus: "ok", "absent", or "unusable" (another version, not JSON;
	// warned and then ignored).
	LockStatus string        `json:"lock_status"`
	Skills     []ListedSkill `json:"skills"`
}

// scopeRoot checks the agent ids (an unknown one is an ErrUsage) and
// resolves the root folder of a scope.
func scopeRoot(o ScopeOptions, agentIDs []string) (string, error) {
	for _, a := range agentIDs {
		if _, ok := agents[a]; !ok {
			return "", unknownAgent(a)
		}
	}
	return installRoot(InstallOptions{Scope: o.Scope, WorkDir: o.WorkDir}, o.Getenv)
}

// agentLocation is where an agent keeps its own entry for skills in a
// scope; ok is false for agents that read .agents/skills (shared).
func agentLocation(id string, scope Scope, root string, getenv func(string) string) (rootRel, bool) {
	return linkDir(agents[id], scope, root, getenv)
}

// readLockEntries reads the lock file of a scope without following a link
// (on it or beneath its root) and refusing a folder, FIFO, device or an
// oversized file. A missing file gives no entries and status "absent"; a
// file of another version or not JSON is warned about and gives
// "unusable".
func readLockEntries(o ScopeOptions, rs roots, at rootRel) (map[string]map[string]any, string, error) {
	if _, err := os.Stat(at.root); errors.Is(err, fs.ErrNotExist) {
		return nil, "absent", nil
	}
	r, err := rs.open(at, false)
	if err != nil {
		return nil, "", unsafePath(err)
	}
	f, err := r.OpenFile(at.rel, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "absent", nil
	}
	if err != nil {
		return nil, "", lockRefusal(at, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, "", fmt.Errorf("%w: skills lock file %s is not a regular file", ErrUnsafePath, at.abs())
	}
	data, err := fsutil.ReadAll(o.Context, f, 0, fsutil.LockFile)
	if err != nil {
		return nil, "", fmt.Errorf("%w: skills lock file %s: %w", ErrUnsafePath, at.abs(), err)
	}
	ld, refusal := parseLock(data, o.Scope, at.abs())
	if refusal != "" {
		o.Warn(strings.Replace(refusal, "not updated", "ignored", 1))
		return nil, "unusable", nil
	}
	out := map[string]map[string]any{}
	for _, k := range ld.skills.keys {
		var e map[string]any
		if json.Unmarshal(ld.skills.vals[k], &e) == nil {
			out[k] = e
		}
	}
	return out, "ok", nil
}

// entryNames lists the visible entries of the folder d.rel beneath its
// root (names starting with "." are ours or hidden). A missing folder is
// empty; a link among its ancestors is an error naming it.
func entryNames(rs roots, d rootRel) ([]string, error) {
	if _, err := os.Stat(d.root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	r, err := rs.open(d, false)
	if err != nil {
		return nil, err
	}
	f, err := r.OpenFile(d.rel, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a folder", ErrUnsafePath, d.abs())
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// lockString reads a string field of a lock entry ("" otherwise).
func lockString(e map[string]any, k string) string {
	s, _ := e[k].(string)
	return s
}

// List reports the skills installed in a scope, per agent, from the
// folders (.agents/skills and each agent's own folder) and the skills lock
// file, and checks each recorded hash against [FolderHash] of the skill's
// folder. Nothing is followed beneath a root: an agent folder reached
// through a symlinked ancestor is skipped with a warning naming the link,
// and a lock file that is a link, folder, FIFO or device is refused.
func List(opt ListOptions) (*ListResult, error) {
	opt.defaults()
	root, err := scopeRoot(opt.ScopeOptions, opt.Agents)
	if err != nil {
		return nil, err
	}
	rs := roots{}
	defer rs.close()
	lockAt := lockPath(opt.Scope, root, opt.Getenv)
	entries, status, err := readLockEntries(opt.ScopeOptions, rs, lockAt)
	if err != nil {
		return nil, err
	}
	res := &ListResult{Scope: opt.Scope, Root: root, LockFile: lockAt.abs(), LockStatus: status, Skills: []ListedSkill{}}

	canonRR := canonicalDir(opt.Scope, root, opt.Getenv)
	byName := map[string]*ListedSkill{}
	get := func(name string) *ListedSkill {
		if s, ok := byName[name]; ok {
			return s
		}
		s := &ListedSkill{Name: name, Agents: []ListedAgent{}}
		byName[name] = s
		return s
	}
	canonNames, err := entryNames(rs, canonRR)
	if err != nil {
		opt.Warn(fmt.Sprintf("not reading %s: %v", canonRR.abs(), unsafePath(err)))
	}
	hashAt := map[string]rootRel{}
	for _, n := range canonNames {
		at := rootRel{root: canonRR.root, label: canonRR.label, rel: canonRR.rel + "/" + n}
		r, err := rs.open(at, false)
		if err != nil {
			return nil, err
		}
		if fi, err := r.Lstat(at.rel); err == nil && fi.IsDir() {
			get(n).Folder = at.abs()
			hashAt[n] = at
		}
	}
	// One pass per agent with its own folder; the shared readers are
	// added for every skill with a real copy in .agents/skills.
	seenDir := map[string][]string{}
	for _, id := range AgentIDs() {
		d, own := agentLocation(id, opt.Scope, root, opt.Getenv)
		if !own {
			continue
		}
		names, ok := seenDir[d.abs()]
		if !ok {
			if names, err = entryNames(rs, d); err != nil {
				opt.Warn(fmt.Sprintf("not reading %s for %s: %v", d.abs(), id, unsafePath(err)))
			}
			seenDir[d.abs()] = names
		}
		for _, n := range names {
			at := rootRel{root: d.root, label: d.label, rel: d.rel + "/" + n}
			r, err := rs.open(at, false)
			if err != nil {
				return nil, err
			}
			fi, err := r.Lstat(at.rel)
			if err != nil {
				continue
			}
			s := get(n)
			la := ListedAgent{Agent: id, Path: at.abs()}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				la.Kind = KindForeignLink
				if s.Folder != "" {
					if t, err := r.Readlink(at.rel); err == nil {
						if !filepath.IsAbs(t) {
							t = filepath.Join(filepath.Dir(at.abs()), t)
						}
						if filepath.Clean(t) == filepath.Clean(s.Folder) {
							la.Kind = KindSymlink
						}
					}
				}
			case fi.IsDir():
				la.Kind = KindCopy
				if _, ok := hashAt[n]; !ok {
					s.Folder = at.abs()
					hashAt[n] = at
				}
			default:
				continue
			}
			s.Agents = append(s.Agents, la)
		}
	}
	for n := range byName {
		if _, shared := hashAt[n]; shared && byName[n].Folder == filepath.Join(canonRR.abs(), n) {
			for _, id := range AgentIDs() {
				if _, own := agentLocation(id, opt.Scope, root, opt.Getenv); !own && agents[id].project != "-" {
					byName[n].Agents = append(byName[n].Agents, ListedAgent{Agent: id, Path: byName[n].Folder, Kind: KindShared})
				}
			}
		}
	}
	for n, e := range entries {
		s := get(n)
		hashKey := "computedHash"
		if opt.Scope == ScopeGlobal {
			hashKey = "skillFolderHash"
		}
		s.Lock = &ListedLock{Source: lockString(e, "source"), SourceType: lockString(e, "sourceType"), Hash: lockString(e, hashKey)}
	}
	for _, s := range byName {
		if len(opt.Agents) > 0 && !slices.ContainsFunc(s.Agents, func(a ListedAgent) bool { return slices.Contains(opt.Agents, a.Agent) }) {
			continue
		}
		slices.SortFunc(s.Agents, func(a, b ListedAgent) int { return strings.Compare(a.Agent, b.Agent) })
		if s.Lock != nil {
			s.Lock.HashStatus, err = hashStatus(opt.Context, rs, hashAt, s)
			if err != nil {
				return nil, err
			}
		}
		res.Skills = append(res.Skills, *s)
	}
	slices.SortFunc(res.Skills, func(a, b ListedSkill) int { return strings.Compare(a.Name, b.Name) })
	return res, nil
}

func hashStatus(ctx context.Context, rs roots, hashAt map[string]rootRel, s *ListedSkill) (string, error) {
	at, ok := hashAt[s.Name]
	switch {
	case !ok:
		return HashNoFolder, nil
	case s.Lock.Hash == "":
		return HashNotRecorded, nil
	}
	r, err := rs.open(at, false)
	if err != nil {
		return "", err
	}
	h, err := FolderHash(ctx, r, at.rel)
	switch {
	case err != nil:
		return "", unsafePath(err)
	case h == "":
		return HashNotComputable, nil
	case h == s.Lock.Hash:
		return HashMatch, nil
	}
	return HashDiffers, nil
}

// RemoveOptions configure [Remove].
type RemoveOptions struct {
	ScopeOptions
	// Names are the skills to remove (folder names, as installed).
	Names []string
	// Agents limits the removal to these agents' own entries (their link or
	// copy). The shared copy in .agents/skills and the lock entry go only
	// when Agents is empty, or names every agent that reads the shared copy
	// and no other agent's entry for the skill remains.
	Agents []string
	// Confirm is called with the plan once every check passed and before
	// anything is deleted; false stops with nothing deleted. Nil: confirmed.
	Confirm func(*RemoveResult) (bool, error)
}

// RemovedPath is one deletion.
type RemovedPath struct {
	Path string `json:"path"`
	// Kind of the entry: "folder", "symlink" or "file".
	Kind string `json:"kind"`
}

// RemovedSkill is one skill's part of a removal.
type RemovedSkill struct {
	Name    string        `json:"name"`
	Removed []RemovedPath `json:"removed"`
	// Kept is the shared copy when it stays (other agents read it), else "".
	Kept string `json:"kept,omitempty"`
	// LockEntry: the lock entry is removed with the shared copy.
	LockEntry bool `json:"lock_entry"`
}

// RemoveResult describes a removal (or, for Confirm, the plan).
type RemoveResult struct {
	Scope  Scope          `json:"scope"`
	Root   string         `json:"root"`
	Skills []RemovedSkill `json:"skills"`
	// Lock: "updated", "unchanged" (no entry to remove) or "untouched"
	// (another version or not JSON; warned).
	Lock string `json:"lock"`
}

// removal is one planned deletion.
type removal struct {
	r    *fsutil.Root
	at   rootRel
	kind string
}

// checkRemoveName refuses a name that is not one folder name.
func checkRemoveName(n string) error {
	if n == "" || n == "." || n == ".." || strings.HasPrefix(n, ".") || strings.ContainsAny(n, `/\`) || !printableASCII(n) {
		return fmt.Errorf("%w: %q is not an installed skill's folder name", ErrUsage, n)
	}
	return nil
}

// Remove deletes installed skills of a scope: each agent's own entry (a
// link is removed itself, never followed; a copy is removed), the shared
// copy in .agents/skills, and the skills lock entry. Every deletion goes
// through [fsutil.Root] of its folder's root: a symlinked ancestor anywhere
// beneath a root (.claude, .claude/skills, .agents, …) refuses the whole
// removal with an error naming the link, before anything is deleted. The
// lock file is opened first without following a link (a link, folder, FIFO
// or device there refuses), flocked, and rewritten in place through that
// handle (truncate, write, fsync; never renamed over). A name
// with nothing installed fails with [ErrNotInstalled].
func Remove(opt RemoveOptions) (res *RemoveResult, err error) {
	opt.defaults()
	defer func() { err = unsafePath(err) }()
	if len(opt.Names) == 0 {
		return nil, fmt.Errorf("%w: name at least one skill to remove", ErrUsage)
	}
	for _, n := range opt.Names {
		if err := checkRemoveName(n); err != nil {
			return nil, err
		}
	}
	root, err := scopeRoot(opt.ScopeOptions, opt.Agents)
	if err != nil {
		return nil, err
	}
	rs := roots{}
	defer rs.close()
	lk, err := openLock(opt.Context, rs, lockPath(opt.Scope, root, opt.Getenv))
	if err != nil {
		return nil, err
	}
	defer lk.close()
	var entries map[string]bool
	var lockRefused string
	if lk.f != nil {
		data, err := lk.read()
		if err != nil {
			return nil, err
		}
		ld, refusal := parseLock(data, opt.Scope, lk.at.abs())
		lockRefused = refusal
		if refusal == "" {
			entries = map[string]bool{}
			for _, k := range ld.skills.keys {
				entries[k] = true
			}
		}
	}

	named := func(id string) bool { return len(opt.Agents) == 0 || slices.Contains(opt.Agents, id) }
	allSharedNamed := true
	for _, id := range AgentIDs() {
		if _, own := agentLocation(id, opt.Scope, root, opt.Getenv); !own && agents[id].project != "-" && !named(id) {
			allSharedNamed = false
		}
	}
	canonRR := canonicalDir(opt.Scope, root, opt.Getenv)
	res = &RemoveResult{Scope: opt.Scope, Root: root, Skills: []RemovedSkill{}}
	var plan []removal
	var lockNames []string
	// lstatAt checks at beneath its root: a link among its ancestors is an
	// error naming it; a missing root or entry is (nil, nil).
	lstatAt := func(at rootRel) (*fsutil.Root, fs.FileInfo, error) {
		if _, err := os.Stat(at.root); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		r, err := rs.open(at, false)
		if err != nil {
			return nil, nil, err
		}
		fi, err := r.Lstat(at.rel)
		if errors.Is(err, fs.ErrNotExist) {
			return r, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		return r, fi, nil
	}
	kindOfEntry := func(fi fs.FileInfo) string {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return "symlink"
		case fi.IsDir():
			return "folder"
		}
		return "file"
	}
	var missing []string
	for _, n := range opt.Names {
		rsk := RemovedSkill{Name: n, Removed: []RemovedPath{}}
		othersRemain := false
		seen := map[string]bool{}
		for _, id := range AgentIDs() {
			d, own := agentLocation(id, opt.Scope, root, opt.Getenv)
			if !own {
				continue
			}
			at := rootRel{root: d.root, label: d.label, rel: d.rel + "/" + n}
			if seen[at.abs()] {
				continue
			}
			r, fi, err := lstatAt(at)
			if err != nil {
				return nil, err
			}
			if fi == nil {
				continue
			}
			if !named(id) {
				othersRemain = true
				continue
			}
			seen[at.abs()] = true
			plan = append(plan, removal{r, at, kindOfEntry(fi)})
			rsk.Removed = append(rsk.Removed, RemovedPath{Path: at.abs(), Kind: kindOfEntry(fi)})
		}
		canon := rootRel{root: canonRR.root, label: canonRR.label, rel: canonRR.rel + "/" + n}
		r, fi, err := lstatAt(canon)
		if err != nil {
			return nil, err
		}
		dropShared := len(opt.Agents) == 0 || (allSharedNamed && !othersRemain)
		if fi != nil {
			if dropShared {
				plan = append(plan, removal{r, canon, kindOfEntry(fi)})
				rsk.Removed = append(rsk.Removed, RemovedPath{Path: canon.abs(), Kind: kindOfEntry(fi)})
			} else {
				rsk.Kept = canon.abs()
			}
		}
		if entries[n] && (dropShared || (fi == nil && !othersRemain)) {
			rsk.LockEntry = true
			lockNames = append(lockNames, n)
		}
		if len(rsk.Removed) == 0 && !rsk.LockEntry {
			missing = append(missing, n)
			continue
		}
		res.Skills = append(res.Skills, rsk)
	}
	if len(missing) > 0 {
		what := "installed"
		if len(opt.Agents) > 0 {
			what = "installed for " + strings.Join(opt.Agents, ", ")
		}
		return nil, fmt.Errorf("%w: no skill named %s is %s in the %s scope (%s)", ErrNotInstalled, strings.Join(missing, ", "), what, opt.Scope, root)
	}
	if opt.Confirm != nil {
		ok, err := opt.Confirm(res)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNotConfirmed
		}
	}
	for _, p := range plan {
		if err := opt.Context.Err(); err != nil {
			return nil, err
		}
		if p.kind == "folder" {
			err = p.r.RemoveAll(p.at.rel)
		} else {
			err = p.r.Remove(p.at.rel)
		}
		if err != nil {
			return nil, err
		}
	}
	res.Lock = "unchanged"
	if lockRefused != "" {
		opt.Warn(lockRefused)
		res.Lock = "untouched"
	} else if len(lockNames) > 0 {
		if res.Lock, err = removeFromLock(lk, opt.Scope, lockNames, opt.Warn); err != nil {
			return nil, err
		}
	}
	return res, nil
}
