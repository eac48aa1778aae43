package serve

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/crypto/scrypt"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// The verified-digest cache (docs/mcp.md "The digest cache"), in the per-user cache
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
// The cache is trusted only when it is ours (docs/mcp.md "The digest
// cache"): its folder must be this user's own and private (0700), its file
// this user's own ([fsutil.CheckOurs]); a shared or foreign one is ignored,
// never refused, with one stderr note naming the fix. The file is
// authenticated: its first line is an HMAC-SHA256, under a key kept in the
// per-user state folder (digest-cache.key, 32 random bytes, 0600, made
// once), of the JSON that follows; a file whose HMAC does not verify is
// ignored whole, so an entry only counts when this user's server wrote it
// after a full verification, and a listing always equals the uncached one.
//
// Sealed results depend on the key: the file holds one key check, an HMAC
// under scrypt(key, salt) with Flow's own cost (one derivation per start,
// as costly to guess against as the bundles themselves); a different key,
// or a key where there was none, misses every sealed entry. The cache is
// off with protected export (it holds no protected data).

const (
	cacheName    = "digest-cache"
	cacheVersion = 5
	// cacheKeyName is the authentication key's file in the per-user state
	// folder.
	cacheKeyName = "digest-cache.key"
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
// never through a link: a recorded folder whose next entry lies beneath it
// is opened in place of its stat (its identity taken from the opened
// descriptor, so no entry beneath a swapped folder is ever looked up). An
// entry whose folder is not the one the walk has open (out of walk
// order), a name that is not a plain relative path, a link or a file where
// a folder with entries was, or any failed lookup is a miss.
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
	rest := strings.TrimPrefix(strings.TrimPrefix(files, "."), "\n")
	for n := 1; rest != ""; {
		rel := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			rel, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if n++; n > maxSnapshot || rel == "." || !fs.ValidPath(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
			return false
		}
		parent, name := "", rel
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			parent, name = rel[:i], rel[i+1:]
		}
		// Close the folders the walk has left.
		for stack[len(stack)-1].rel != parent {
			if len(stack) == 1 {
				return false
			}
			stack[len(stack)-1].h.close()
			stack = stack[:len(stack)-1]
		}
		top := stack[len(stack)-1].h
		var id entryIdent
		if len(rest) > len(rel) && rest[len(rel)] == '/' && strings.HasPrefix(rest, rel) {
			// A folder with entries: open it now, its identity from the
			// descriptor.
			sub, sid, ok := top.openDir(name)
			if !ok {
				return false
			}
			stack = append(stack, open{rel, sub})
			id = sid
		} else if id, ok = top.stat(name); !ok {
			return false
		}
		ih.add(rel, id)
	}
	return ih.equal(ident)
}

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

// cacheReady makes the cache usable once per start: the cache folder is
// created 0700 when missing, and an existing one must be this user's own
// and private; the authentication key is read (or made) in the per-user
// state folder. It returns the key, or nil when the cache is off for this
// start (a shared or foreign folder or file is noted on stderr once).
func (s *bundleLoader) cacheReady() []byte {
	s.cacheOnce.Do(func() {
		if s.cacheDir == "" || s.export || !s.privateDir(s.cacheDir) {
			return
		}
		s.cacheKey = s.loadCacheKey()
	})
	return s.cacheKey
}

// ignoreCache notes once why the cache is not used (a NotOursError names
// the file or folder and the fix).
func (s *bundleLoader) ignoreCache(err error) {
	fmt.Fprintf(s.stderr, "serve: warning: the digest cache is ignored, every bundle is verified in full: %s\n", err)
}

// privateDir creates dir 0700 when missing and reports whether it is a real
// folder of this user's that no one else can read or change. A folder that
// is not is noted and left as it is.
func (s *bundleLoader) privateDir(dir string) bool {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return false
	}
	if err := fsutil.CheckOurs(dir, fi); err != nil {
		s.ignoreCache(err)
		return false
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		s.ignoreCache(&fsutil.NotOursError{Path: dir, Reason: "is open to other users", Fix: "chmod 700 " + dir})
		return false
	}
	return true
}

// loadCacheKey reads the cache's key from the per-user state folder, making
// both when missing (the key once, published without replacing, so
// concurrent servers agree). nil: no key, no cache.
func (s *bundleLoader) loadCacheKey() []byte {
	dir, err := userdirs.StateDir()
	if err != nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	// No one else may replace the key: the folder is ours, not writable by
	// others (it need not be private; the key file is).
	if err := fsutil.CheckOurs(dir, fi); err != nil {
		s.ignoreCache(err)
		return nil
	}
	p := filepath.Join(dir, cacheKeyName)
	read := func() ([]byte, error) {
		f, fi, err := fsutil.Open(p, fsutil.Limit{Kind: "digest cache key", Max: 64}, fsutil.NoFollow)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := fsutil.CheckOurs(p, fi); err != nil {
			return nil, err
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
			return nil, &fsutil.NotOursError{Path: p, Reason: "is readable by other users", Fix: "remove it (a new key is made; the cache is rebuilt)"}
		}
		key := make([]byte, 33)
		n, _ := io.ReadFull(f, key)
		if n != 32 {
			return nil, errors.New("not a 32-byte key")
		}
		return key[:32], nil
	}
	key, err := read()
	if errors.Is(err, fs.ErrNotExist) {
		fresh := make([]byte, 32)
		_, _ = rand.Read(fresh) // crypto/rand.Read never fails (Go 1.24+)
		if err = fsutil.CreateFile(p, fresh, 0o600); err == nil {
			return fresh
		}
		if errors.Is(err, fs.ErrExist) {
			key, err = read()
		}
	}
	var ne *fsutil.NotOursError
	if errors.As(err, &ne) {
		s.ignoreCache(ne)
	}
	if err != nil {
		return nil
	}
	return key
}

// cacheMAC is the hex HMAC-SHA256 under key of a cache file's JSON body.
func cacheMAC(key, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("openadapt-agent digest-cache v5\n"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// sealCache is the stored form of a cache file's JSON body: its HMAC on
// the first line, then the body.
func sealCache(key, body []byte) []byte {
	out := make([]byte, 0, 2*sha256.Size+1+len(body))
	out = append(out, cacheMAC(key, body)...)
	out = append(out, '\n')
	return append(out, body...)
}

// openCache returns the JSON body of a stored cache file whose HMAC
// verifies under key, or ok false (the file is then ignored whole).
func openCache(key, data []byte) (body []byte, ok bool) {
	const n = 2 * sha256.Size
	if len(data) < n+1 || data[n] != '\n' {
		return nil, false
	}
	body = data[n+1:]
	return body, hmac.Equal(data[:n], []byte(cacheMAC(key, body)))
}

// rootCache is one root's cache during a discovery.
type rootCache struct {
	path    string
	file    *cacheFile               // as read, nil on none
	byDir   map[string]*cachedBundle // from file
	keyOK   *bool                    // key check result, computed lazily
	key     string                   // the server's passphrase ("" none)
	auth    []byte                   // the cache file's authentication key
	out     []cachedBundle           // entries to store
	changed bool
	started time.Time // before any snapshot of this discovery
}

// openRootCache reads root's cache file: a missing, unreadable or
// unauthenticated file is an empty cache (replaced at the end); a file that
// is not this user's own is ignored with a note and left alone. nil when
// the cache is off for root.
func (s *bundleLoader) openRootCache(root string) *rootCache {
	rc := &rootCache{path: s.cachePath(root), key: s.key, started: time.Now()}
	if rc.path == "" {
		return nil
	}
	if rc.auth = s.cacheReady(); rc.auth == nil {
		return nil
	}
	data, err := fsutil.ReadOurs(context.Background(), rc.path, cacheLimit)
	if errors.Is(err, fsutil.ErrNotOurs) {
		// Neither read nor replaced: the note names the fix.
		s.ignoreCache(err)
		return nil
	}
	if err != nil {
		return rc
	}
	body, ok := openCache(rc.auth, data)
	var c cacheFile
	if !ok || !decodeCache(body, &c) || c.V != cacheVersion || c.Root != root {
		return rc
	}
	rc.file = &c
	rc.out = make([]cachedBundle, 0, len(c.Bundles)) // a warm start keeps them all
	rc.byDir = make(map[string]*cachedBundle, len(c.Bundles))
	for i := range c.Bundles {
		cb := &c.Bundles[i]
		if !workflowid.ValidBase(cb.BaseID) || len(cb.ParamTypes) != len(cb.Params) {
			return &rootCache{path: rc.path, key: rc.key, auth: rc.auth, started: rc.started}
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

// markerSeen reports whether checkAll has just found dir's recorded
// identity unchanged with a bundle marker among its top-level entries
// (workflow.json or workflow.json.enc), i.e. whether a stat just saw the
// marker; false for anything else, including a nil cache.
func (rc *rootCache) markerSeen(dir string) bool {
	cb := rc.entry(dir)
	if cb == nil || !cb.unchanged {
		return false
	}
	for rel := range strings.SplitSeq(cb.Files, "\n") {
		if rel == "workflow.json" || rel == "workflow.json.enc" {
			return true
		}
	}
	return false
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
	if err != nil {
		return
	}
	// A new file renamed over the old one: a link there is replaced.
	_ = fsutil.WriteFile(rc.path, sealCache(rc.auth, data), 0o600)
}
