package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/scrypt"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// The verified-digest cache (docs/mcp.md "Startup"), in the per-user cache
// folder: the result of each bundle's last FULL verification, keyed per bundle on
// the identity of every entry of the bundle folder, walked without
// following any link: the folder itself, every sub-folder and every file
// (so every file full verification reads, including unlisted
// templates/**/*.enc, and the absence of a marker, which a new entry would
// change through its folder's mtime). The identity is the entry's type and
// permission bits, size, device, inode and nanosecond mtime and ctime; any
// difference is a miss and the bundle is verified again in full.
//
// The identity is taken before the verification that produced the entry,
// so any change made while verifying or later changes it; a folder with an
// entry changed within [racyWindow] of the snapshot is not cached, since a
// second change in the same clock tick could keep every identity. It
// serves listing only: a run re-verifies its bundle in full
// (verifyForRun), and Flow verifies it again.
//
// Sealed results depend on the key: the file holds one key check, an HMAC
// under scrypt(key, salt) with Flow's own cost (one derivation per start,
// as costly to guess against as the bundles themselves); a different key,
// or a key where there was none, misses every sealed entry. The cache is
// off with protected export (it holds no protected data).

const (
	cacheName    = "digest-cache"
	cacheVersion = 5
	// maxSnapshot bounds the entries walked per bundle; a larger bundle
	// folder is verified at every start instead of being cached.
	maxSnapshot = 4096
	// keyCheckR and keyCheckP are the key check's scrypt block size and
	// parallelism (Flow's seal defaults).
	keyCheckR, keyCheckP = 8, 1
)

// keyCheckN is the key check's scrypt cost: Flow's seal default (N=2^15,
// r=8, p=1); testOnlyKeyCheckN, when positive, replaces it (tests).
const keyCheckN = 1 << 15

var testOnlyKeyCheckN int

// cacheLimit caps the cache file read at start.
var cacheLimit = fsutil.Limit{Kind: "digest cache", Max: 64 << 20}

type cacheFile struct {
	V    int    `json:"v"`
	Root string `json:"root"`
	// KeySalt and KeyMAC are the key check ("" and "" when stored without
	// a key).
	KeySalt string         `json:"key_salt,omitempty"`
	KeyMAC  string         `json:"key_mac,omitempty"`
	Bundles []cachedBundle `json:"bundles"`
}

type cachedBundle struct {
	Dir    string `json:"dir"`    // candidate folder (absolute)
	Sealed bool   `json:"sealed"` // result depends on the key check
	// Files are the walked entries, bundle-relative ("." for the folder),
	// in walk order, joined by "\n" (one JSON string decodes far faster
	// than an array); Ident is the SHA-256 of their identities.
	Files string `json:"files"`
	Ident string `json:"ident"`

	BaseID        string   `json:"base_id"`
	Available     bool     `json:"available"`
	Reason        string   `json:"reason,omitempty"`
	Params        []string `json:"params"`
	ParamTypes    []string `json:"param_types"` // Flow's type of each of Params
	StepCount     int      `json:"step_count"`
	SchemaVersion *int     `json:"schema_version"`
	ContentDigest string   `json:"content_digest,omitempty"`
	Encrypted     bool     `json:"encrypted"`

	// unchanged: checkAll found every identity as recorded (not stored).
	unchanged bool
}

// snapshot is the walked identity of one bundle folder.
type snapshot struct {
	files string // the walked entries, as [cachedBundle.Files]
	ident string
	// newest is the latest change time (ctime where the platform has one,
	// else mtime) of any entry, in Unix nanoseconds.
	newest int64
}

// entryIdent is one entry's identity: its type and permission bits (the
// platform's encoding), size, device, inode and nanosecond mtime and ctime
// (0 where the platform has none). dir is whether it is a folder (part of
// mode, kept apart for the walk).
type entryIdent struct {
	mode, size, dev, ino, mtime, ctime uint64
	dir                                bool
}

// racyWindow: a folder with an entry changed less than this before its
// snapshot is not cached ("racy git"): a second change within the same
// file-system clock tick could leave every identity unchanged.
// testOnlyRacyWindow, when set, replaces it (tests that count
// verifications).
const racyWindow = time.Second

var testOnlyRacyWindow *time.Duration

func racyWindowNow() time.Duration {
	if testOnlyRacyWindow != nil {
		return *testOnlyRacyWindow
	}
	return racyWindow
}

// identHash accumulates the identity lines of one walk.
type identHash struct {
	h   hash.Hash
	buf []byte
}

func newIdentHash() *identHash { return &identHash{h: sha256.New(), buf: make([]byte, 0, 256)} }

// add hashes one entry's identity record: its bundle-relative path ("."
// for the folder) and a NUL, then each field as 8 little-endian bytes (a
// fixed-size record after the NUL-terminated name: unambiguous, and no
// number formatting per entry).
func (ih *identHash) add(rel string, id entryIdent) {
	b := append(ih.buf[:0], rel...)
	b = append(b, 0)
	for _, n := range [...]uint64{id.mode, id.size, id.dev, id.ino, id.mtime, id.ctime} {
		b = binary.LittleEndian.AppendUint64(b, n)
	}
	ih.buf = b
	ih.h.Write(b)
}

// equal reports whether the hash so far is the hex digest ident.
func (ih *identHash) equal(ident string) bool {
	var sum [sha256.Size]byte
	var hx [2 * sha256.Size]byte
	hex.Encode(hx[:], ih.h.Sum(sum[:0]))
	return string(hx[:]) == ident
}

func (ih *identHash) hex() string { return hex.EncodeToString(ih.h.Sum(nil)) }

// takeSnapshot walks dir without following links and hashes the identity
// of every entry, depth first in byte order of the names, each folder
// before its entries. ok is false when the folder cannot be walked
// completely, holds more than maxSnapshot entries or a name with a newline
// (then it is not cached).
func takeSnapshot(dir string) (snapshot, bool) {
	root, id, ok := openRootDir(dir)
	if !ok {
		return snapshot{}, false
	}
	defer root.close()
	ih := newIdentHash()
	var files strings.Builder
	n := 0
	var newest int64
	add := func(rel string, id entryIdent) {
		if n > 0 {
			files.WriteByte('\n')
		}
		files.WriteString(rel)
		n++
		ih.add(rel, id)
		t := int64(id.ctime)
		if t == 0 {
			t = int64(id.mtime)
		}
		newest = max(newest, t)
	}
	add(".", id)
	var walk func(d dirHandle, rel string) bool
	walk = func(d dirHandle, rel string) bool {
		names, ok := d.names()
		if !ok {
			return false
		}
		for _, name := range names {
			if n >= maxSnapshot || strings.IndexByte(name, '\n') >= 0 {
				return false
			}
			r := name
			if rel != "" {
				r = rel + "/" + name
			}
			id, ok := d.stat(name)
			if !ok {
				return false
			}
			add(r, id)
			if id.dir {
				sub, ok := d.open(name, id)
				if !ok {
					return false
				}
				ok = walk(sub, r)
				sub.close()
				if !ok {
					return false
				}
			}
		}
		return true
	}
	if !walk(root, "") {
		return snapshot{}, false
	}
	return snapshot{files: files.String(), ident: ih.hex(), newest: newest}, true
}

// checkSnapshot re-stats the recorded entries of dir (files, "\n"-joined
// in walk order, "." first) and reports whether every identity is
// unchanged. A folder is opened before anything beneath it is looked up,
// never through a link, and only when it is the folder its own entry just
// recorded; an entry out of walk order, a name that is not a plain
// relative path, a link where a folder was, or any failed lookup is a miss.
func checkSnapshot(dir, files, ident string) bool {
	if files != "." && !strings.HasPrefix(files, ".\n") {
		return false
	}
	root, id, ok := openRootDir(dir)
	if !ok {
		return false
	}
	type open struct {
		rel string // "" for the bundle folder
		h   dirHandle
	}
	var stackBuf [4]open
	stack := append(stackBuf[:0], open{"", root})
	defer func() {
		for _, o := range stack {
			o.h.close()
		}
	}()
	ih := newIdentHash()
	ih.add(".", id)
	prevRel, prevID := ".", id
	n := 0
	for rel := range strings.SplitSeq(files, "\n") {
		if n++; n == 1 {
			continue // "."
		}
		if n > maxSnapshot || rel == "." || !fs.ValidPath(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
			return false
		}
		parent, name := "", rel
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			parent, name = rel[:i], rel[i+1:]
		}
		// Close the folders the walk has left; open the one just recorded
		// when rel is its first entry.
		for top := stack[len(stack)-1]; top.rel != parent; top = stack[len(stack)-1] {
			if parent == prevRel && prevID.dir && parentOf(parent) == top.rel {
				sub, ok := top.h.open(name0(parent), prevID)
				if !ok {
					return false
				}
				stack = append(stack, open{parent, sub})
				break
			}
			if len(stack) == 1 {
				return false
			}
			top.h.close()
			stack = stack[:len(stack)-1]
		}
		id, ok := stack[len(stack)-1].h.stat(name)
		if !ok {
			return false
		}
		ih.add(rel, id)
		prevRel, prevID = rel, id
	}
	return ih.equal(ident)
}

// parentOf is the folder of a bundle-relative path ("" for the bundle
// folder); name0 is its last element.
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

func name0(rel string) string { return rel[strings.LastIndexByte(rel, '/')+1:] }

// cachePath is the cache file of one bundles root in the per-user cache
// folder (in every mode, never in the runs folder), one file per root so
// that servers of different roots do not evict each other. "" when the
// cache is off.
func (s *bundleLoader) cachePath(root string) string {
	if s.cacheDir == "" || s.export {
		return ""
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(s.cacheDir, cacheName+"-"+hex.EncodeToString(sum[:8])+".json")
}

// prepareCacheDir creates the cache folder 0700 and checks it is a real
// folder, not a symlink, with no group or other permission bits. A folder
// that fails is not used (and not changed).
func prepareCacheDir(dir string) bool {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return false
	}
	return fi.Mode().Perm()&0o077 == 0
}

// rootCache is one root's cache during a discovery.
type rootCache struct {
	path    string
	file    *cacheFile               // as read, nil on none
	byDir   map[string]*cachedBundle // from file
	keyOK   *bool                    // key check result, computed lazily
	key     string                   // the server's passphrase ("" none)
	out     []cachedBundle           // entries to store
	changed bool
	started time.Time // before any snapshot of this discovery
}

// openRootCache reads root's cache file (a missing, unreadable or foreign
// file is an empty cache).
func (s *bundleLoader) openRootCache(root string) *rootCache {
	rc := &rootCache{path: s.cachePath(root), key: s.key, started: time.Now()}
	if rc.path == "" {
		return nil
	}
	data, err := fsutil.ReadFile(context.Background(), rc.path, cacheLimit, fsutil.NoFollow)
	if err != nil {
		return rc
	}
	var c cacheFile
	if !decodeCache(data, &c) || c.V != cacheVersion || c.Root != root {
		return rc
	}
	rc.file = &c
	rc.out = make([]cachedBundle, 0, len(c.Bundles)) // a warm start keeps them all
	rc.byDir = make(map[string]*cachedBundle, len(c.Bundles))
	for i := range c.Bundles {
		cb := &c.Bundles[i]
		if !workflowid.ValidBase(cb.BaseID) || len(cb.ParamTypes) != len(cb.Params) {
			return &rootCache{path: rc.path, key: rc.key, started: rc.started}
		}
		rc.byDir[cb.Dir] = cb
	}
	return rc
}

// checkAll re-stats the recorded entries of every cached folder on every
// core and marks the entries whose identity is unchanged.
func (rc *rootCache) checkAll() {
	if rc == nil || rc.file == nil {
		return
	}
	cbs := make([]*cachedBundle, len(rc.file.Bundles))
	for i := range rc.file.Bundles {
		cbs[i] = &rc.file.Bundles[i]
	}
	parallel(cbs, func(cb *cachedBundle) { cb.unchanged = checkSnapshot(cb.Dir, cb.Files, cb.Ident) })
}

// entry returns the cache's entry for the candidate dir, or nil.
func (rc *rootCache) entry(dir string) *cachedBundle {
	if rc == nil || rc.byDir == nil {
		return nil
	}
	return rc.byDir[dir]
}

// hit keeps cb (its folder is unchanged) and returns its workflow.
func (rc *rootCache) hit(cb *cachedBundle, dir string) *workflow {
	rc.out = append(rc.out, *cb)
	w := &workflow{id: cb.BaseID, baseID: cb.BaseID, dir: dir, available: cb.Available,
		reason: bundle.Unavailable(cb.Reason), params: paramsOf(cb.Params, cb.ParamTypes), stepCount: cb.StepCount,
		schemaVersion: cb.SchemaVersion, contentDigest: cb.ContentDigest, encrypted: cb.Encrypted,
		slug: filepath.Base(dir)}
	if !w.available {
		w.setLoadErr(nil)
	}
	return w
}

// keyMatches runs the key check once: true when the file was stored with
// the same key (or with none and there is none now).
func (rc *rootCache) keyMatches() bool {
	if rc.keyOK == nil {
		ok := false
		switch f := rc.file; {
		case f.KeySalt == "" && f.KeyMAC == "":
			ok = rc.key == ""
		case rc.key != "":
			ok = hmac.Equal([]byte(keyCheck(rc.key, f.KeySalt)), []byte(f.KeyMAC))
		}
		rc.keyOK = &ok
	}
	return *rc.keyOK
}

// keyCheck is hex HMAC-SHA256 under scrypt(key, salt) of a fixed label.
func keyCheck(key, saltHex string) string {
	salt, err := hex.DecodeString(saltHex)
	if err != nil || len(salt) != 16 {
		return ""
	}
	n := keyCheckN
	if testOnlyKeyCheckN > 0 {
		n = testOnlyKeyCheckN
	}
	k, err := scrypt.Key([]byte(key), salt, n, keyCheckR, keyCheckP, 32)
	if err != nil {
		return ""
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte("openadapt-agent digest-cache key check v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// record adds the result of a fresh full verification of w under the
// identity pre taken before it, unless pre is missing or racy.
func (rc *rootCache) record(w *workflow, sealed bool, pre snapshot) {
	if rc == nil {
		return
	}
	rc.changed = true
	if pre.ident == "" || pre.newest >= rc.started.UnixNano()-int64(racyWindowNow()) {
		return
	}
	rc.out = append(rc.out, cachedBundle{Dir: w.dir, Sealed: sealed, Files: pre.files, Ident: pre.ident,
		BaseID: w.baseID, Available: w.available, Reason: string(w.reason), Params: w.flowNames(), ParamTypes: w.paramTypes(),
		StepCount: w.stepCount, SchemaVersion: w.schemaVersion, ContentDigest: w.contentDigest, Encrypted: w.encrypted})
}

// store writes the cache file when anything changed (best effort).
func (rc *rootCache) store(root string) {
	if rc == nil || (!rc.changed && rc.file != nil && len(rc.out) == len(rc.file.Bundles)) {
		return
	}
	c := cacheFile{V: cacheVersion, Root: root, Bundles: rc.out}
	if c.Bundles == nil {
		c.Bundles = []cachedBundle{}
	}
	sealed := false
	for _, cb := range rc.out {
		sealed = sealed || cb.Sealed
	}
	if sealed && rc.key != "" {
		if rc.file != nil && rc.keyOK != nil && *rc.keyOK && rc.file.KeySalt != "" {
			c.KeySalt, c.KeyMAC = rc.file.KeySalt, rc.file.KeyMAC
		} else {
			var salt [16]byte
			if _, err := rand.Read(salt[:]); err != nil {
				return
			}
			c.KeySalt = hex.EncodeToString(salt[:])
			if c.KeyMAC = keyCheck(rc.key, c.KeySalt); c.KeyMAC == "" {
				return
			}
		}
	}
	data, err := json.Marshal(c)
	if err != nil || !prepareCacheDir(filepath.Dir(rc.path)) {
		return
	}
	_ = fsutil.WriteFile(rc.path, data, 0o600)
}
