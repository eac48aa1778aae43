package skill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Lock file versions written by the `skills` CLI (vercel-labs skills 1.7.4).
const (
	globalLockVersion  = 3
	projectLockVersion = 1
)

// Lock-acquisition protocol shared with gh and the skills CLI: an
// exclusive flock on the lock file itself, retried.
var (
	lockTries = 30
	lockDelay = 100 * time.Millisecond
)

// lockPath returns the lock file of a scope. The global lock's folder is
// its own root; the project lock lives in the project root.
func lockPath(scope Scope, root string, getenv func(string) string) rootRel {
	if scope == ScopeGlobal {
		if d := getenv("XDG_STATE_HOME"); d != "" {
			return rootRel{root: filepath.Join(d, "skills"), label: "$XDG_STATE_HOME/skills", rel: ".skill-lock.json"}
		}
		return rootRel{root: filepath.Join(getenv("HOME"), ".agents"), label: "~/.agents", rel: ".skill-lock.json"}
	}
	return rootRel{root: root, rel: "skills-lock.json"}
}

// lockHandle is a lock file opened (and flocked) before an install starts,
// or the place to create one when none exists yet.
type lockHandle struct {
	ctx context.Context
	at  rootRel
	rs  roots
	f   *os.File // nil: no lock file yet
}

func (l *lockHandle) close() {
	if l.f != nil {
		unlockFile(l.f)
		l.f.Close()
	}
}

// lockRefusal explains why a lock file cannot be used.
func lockRefusal(at rootRel, err error) error {
	var le *fsutil.LinkError
	if errors.As(err, &le) || errors.Is(err, fsutil.ErrNotOurs) {
		return fmt.Errorf("%w: skills lock file: %w", ErrUnsafePath, err)
	}
	if errors.Is(err, fsutil.ErrNotRegular) || errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("%w: skills lock file %s is not a regular file", ErrUnsafePath, at.abs())
	}
	return fmt.Errorf("opening skills lock file %s: %w", at.abs(), unwrapPathError(err))
}

// openLock opens an existing lock file without following a link (on the
// file or beneath its root), refusing a link, folder, FIFO or device, a
// file above the lock-file cap, and a file that is not this user's own
// (another owner, a second hard link, a group or other write bit: the
// rewrite in place would change whatever else it is; fsutil.OpenOurs), and
// takes the flock on that handle, which
// every later read and write goes through (gh's protocol: the file is never
// replaced, so whoever holds the flock holds the file). A missing lock file
// is created later, by read.
func openLock(ctx context.Context, rs roots, at rootRel) (*lockHandle, error) {
	lk := &lockHandle{ctx: ctx, at: at, rs: rs}
	if _, err := os.Stat(at.root); errors.Is(err, fs.ErrNotExist) {
		return lk, nil
	}
	r, err := rs.open(at, false)
	if err != nil {
		return nil, err
	}
	f, err := r.OpenOurs(at.rel, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return lk, nil
	}
	if err != nil {
		return nil, lockRefusal(at, err)
	}
	if err := lk.take(f); err != nil {
		return nil, err
	}
	return lk, nil
}

func (l *lockHandle) take(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if fi.Size() > fsutil.LockFile.Max {
		f.Close()
		return fmt.Errorf("%w: skills lock file %s: %w", ErrUnsafePath, l.at.abs(), &fsutil.TooLargeError{Limit: fsutil.LockFile, Size: fi.Size()})
	}
	if err := lockFile(l.ctx, f); err != nil {
		f.Close()
		return fmt.Errorf("locking %s: %w", l.at.abs(), err)
	}
	l.f = f
	return nil
}

// create makes the lock file (and its root folder) when none existed.
func (l *lockHandle) create() error {
	r, err := l.rs.open(l.at, true)
	if err != nil {
		return err
	}
	f, err := r.OpenOurs(l.at.rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		f, err = r.OpenOurs(l.at.rel, os.O_RDWR, 0)
	}
	if err != nil {
		return lockRefusal(l.at, err)
	}
	return l.take(f)
}

// object is a JSON object that keeps its keys' order and raw values, so
// entries, fields and top-level keys we do not know survive a rewrite.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func newObject() *object { return &object{vals: map[string]json.RawMessage{}} }

// lockOptions are the rules a lock file is read under: the project's one
// strict core (internal/util/pyjson). skills@1.7.4 writes the file with
// JSON.stringify, which never repeats a key, and reads it with JSON.parse,
// which keeps a repeated key's last value. A file with a repeated key (at
// any depth), invalid UTF-8 or a lone surrogate escape was therefore not
// written by the CLI: it is refused and left untouched with a warning
// (fail-closed, as for any file we cannot read), never rewritten under a
// reading the CLI might not share. Numbers are kept as their tokens.
var lockOptions = pyjson.Options{Floats: pyjson.FloatRefuse}

// parseObject parses one JSON object, keeping its keys' order and each
// value's exact source bytes (sub-slices of data, capacity clipped).
func parseObject(data []byte) (*object, error) {
	d, err := pyjson.Parse(data, lockOptions)
	if err != nil {
		return nil, err
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object {
		return nil, errors.New("not a JSON object")
	}
	o := &object{keys: make([]string, 0, d.Len(root)), vals: make(map[string]json.RawMessage, d.Len(root))}
	for k, v := range d.Members(root) {
		o.set(d.Str(k), slices.Clip(d.Raw(v)))
	}
	return o, nil
}

func (o *object) set(k string, v json.RawMessage) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) setJSON(k string, v any) {
	raw, _ := json.Marshal(v)
	o.set(k, raw)
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// lockDoc is a parsed lock file of the right version: the whole document
// and its skills object, both keeping unknown keys and their order.
type lockDoc struct {
	doc, skills *object
}

// parseLock decodes lock-file bytes for scope. An empty file is a new lock.
// It returns a non-empty refusal (the warning text, naming path) for a file
// that is not JSON, has another version or no skills object: such a file is
// left untouched (gh and the skills CLI would discard it; we never do).
func parseLock(data []byte, scope Scope, path string) (*lockDoc, string) {
	want := globalLockVersion
	if scope == ScopeProject {
		want = projectLockVersion
	}
	if len(bytes.TrimSpace(data)) == 0 {
		doc := newObject()
		doc.setJSON("version", want)
		doc.set("skills", json.RawMessage("{}"))
		return &lockDoc{doc: doc, skills: newObject()}, ""
	}
	doc, err := parseObject(data)
	if err != nil {
		return nil, fmt.Sprintf("skills lock file %s is not strict JSON (%v); not updated", path, err)
	}
	var v json.Number
	if err := json.Unmarshal(doc.vals["version"], &v); err != nil || v.String() != fmt.Sprint(want) {
		shown := string(doc.vals["version"])
		if shown == "" {
			shown = "none"
		}
		return nil, fmt.Sprintf("skills lock file has version %s; not updated", shown)
	}
	skills := newObject()
	if raw, ok := doc.vals["skills"]; ok {
		if skills, err = parseObject(raw); err != nil {
			return nil, fmt.Sprintf("skills lock file %s has no skills object; not updated", path)
		}
	}
	return &lockDoc{doc: doc, skills: skills}, ""
}

// read reads the locked file (creating it first when absent).
func (l *lockHandle) read() ([]byte, error) {
	if l.f == nil {
		if err := l.create(); err != nil {
			return nil, err
		}
	}
	if _, err := l.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := fsutil.ReadAll(l.ctx, l.f, 0, fsutil.LockFile)
	if err != nil {
		return nil, fmt.Errorf("reading skills lock file %s: %w", l.at.abs(), err)
	}
	return data, nil
}

// write rewrites the locked file in place with ld (2-space indented
// JSON) through the flocked handle: truncate, write, fsync. The file is
// never replaced by a rename, which would break the protocol gh and the
// skills CLI share: a writer waiting on the flock would then lock a file
// no longer at the path and its update would be lost. The write does not
// look at the context, so a signal cannot stop it half way.
func (l *lockHandle) write(ld *lockDoc, scope Scope) error {
	if scope == ScopeProject {
		slices.Sort(ld.skills.keys) // the CLI writes project entries sorted by name
	}
	raw, _ := ld.skills.MarshalJSON()
	ld.doc.set("skills", raw)
	compact, _ := ld.doc.MarshalJSON()
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	err := l.f.Truncate(0)
	if err == nil {
		_, err = l.f.WriteAt(out.Bytes(), 0)
	}
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		return fmt.Errorf("writing skills lock file %s: %w", l.at.abs(), unwrapPathError(err))
	}
	return nil
}

// load reads and parses the locked file; a file that is left untouched
// (another version, not JSON) is warned about and gives (nil, nil).
func (l *lockHandle) load(scope Scope, warn func(string)) (*lockDoc, error) {
	data, err := l.read()
	if err != nil {
		return nil, err
	}
	ld, refusal := parseLock(data, scope, l.at.abs())
	if refusal != "" {
		warn(refusal)
		return nil, nil
	}
	return ld, nil
}

// updateLock records the skill in the lock file of the scope, with hash
// (see [FolderHash]) as its skillFolderHash (global) or computedHash
// (project). A file with another version, or one that does not parse, is
// left untouched with a warning.
func updateLock(lk *lockHandle, scope Scope, name, source, hash string, now time.Time, warn func(string)) (string, error) {
	ld, err := lk.load(scope, warn)
	if ld == nil || err != nil {
		return "untouched", err
	}
	skills := ld.skills
	entry := newObject()
	if raw, ok := skills.vals[name]; ok {
		if e, err := parseObject(raw); err == nil {
			entry = e
		}
	}
	entry.setJSON("source", source)
	entry.setJSON("sourceType", "local")
	if scope == ScopeGlobal {
		entry.setJSON("sourceUrl", source)
		entry.setJSON("skillFolderHash", hash)
		if _, ok := entry.vals["installedAt"]; !ok {
			entry.setJSON("installedAt", now.Format(time.RFC3339))
		}
		entry.setJSON("updatedAt", now.Format(time.RFC3339))
	} else {
		entry.setJSON("computedHash", hash)
	}
	raw, _ := entry.MarshalJSON()
	skills.set(name, raw)
	if err := lk.write(ld, scope); err != nil {
		return "", err
	}
	return "updated", nil
}

// removeFromLock deletes the entries names from the lock file of the
// scope. It returns "updated", "unchanged" (no such entry, or no lock
// file) or "untouched" (a foreign version or unparsable file, warned).
func removeFromLock(lk *lockHandle, scope Scope, names []string, warn func(string)) (string, error) {
	if lk.f == nil {
		return "unchanged", nil
	}
	ld, err := lk.load(scope, warn)
	if ld == nil || err != nil {
		return "untouched", err
	}
	n := len(ld.skills.keys)
	for _, name := range names {
		if _, ok := ld.skills.vals[name]; ok {
			delete(ld.skills.vals, name)
			ld.skills.keys = slices.DeleteFunc(ld.skills.keys, func(k string) bool { return k == name })
		}
	}
	if len(ld.skills.keys) == n {
		return "unchanged", nil
	}
	if err := lk.write(ld, scope); err != nil {
		return "", err
	}
	return "updated", nil
}
