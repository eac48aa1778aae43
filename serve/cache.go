package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/atomicfile"
)

// The verified-digest cache (§7.1): the result of the last discovery, keyed
// by the identity (type, size, mtime_ns, inode, device) of every entry of
// the bundles root and of each bundle's marker and manifest files. Any
// difference is a miss, and the whole discovery runs again. It serves
// listing only: a run always re-verifies its own bundle in full
// (verifyForRun), and Flow verifies it again.
//
// It is used only when it cannot change an answer: never with protected
// export (the cache holds no protected data) and never when any bundle is
// sealed (a sealed bundle's metadata depends on the key).

const cacheName = "digest-cache.json"

type cacheFile struct {
	V         int              `json:"v"`
	Key       string           `json:"key"`
	Workflows []cachedWorkflow `json:"workflows"`
}

type cachedWorkflow struct {
	ID            string   `json:"id"`
	BaseID        string   `json:"base_id"`
	Dir           string   `json:"dir"`
	Available     bool     `json:"available"`
	ErrClass      string   `json:"err_class,omitempty"`
	Params        []string `json:"params"`
	StepCount     int      `json:"step_count"`
	SchemaVersion *int     `json:"schema_version"`
	ContentDigest string   `json:"content_digest,omitempty"`
}

// rootKey fingerprints the bundles root: the root itself, each entry, and
// for each directory entry its marker and manifest files. ok is false when
// the root cannot be fingerprinted or holds a sealed bundle.
func rootKey(root string) (string, bool) {
	h := sha256.New()
	var buf []byte
	ident := func(p string) bool {
		fi, err := os.Lstat(p)
		if err != nil {
			fmt.Fprintf(h, "%s\x00-\n", filepath.Base(p))
			return true
		}
		ino, dev := fileIdent(fi)
		buf = append(buf[:0], filepath.Base(p)...)
		for _, n := range []uint64{uint64(fi.Mode()), uint64(fi.Size()), uint64(fi.ModTime().UnixNano()), ino, dev} {
			buf = append(buf, 0)
			buf = strconv.AppendUint(buf, n, 16)
		}
		buf = append(buf, '\n')
		h.Write(buf)
		if fi.Mode()&fs.ModeSymlink != 0 {
			// The target's kind decides between "ignored" and "refused".
			if t, err := os.Stat(p); err == nil {
				fmt.Fprintf(h, "->%v\n", t.IsDir())
			}
		}
		return true
	}
	markers := func(dir string) bool {
		if _, err := os.Lstat(filepath.Join(dir, "workflow.json.enc")); err == nil {
			return false
		}
		for _, m := range []string{"workflow.json", "workflow.json.enc", "manifest.json"} {
			ident(filepath.Join(dir, m))
		}
		return true
	}
	ident(root)
	if !markers(root) {
		return "", false
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		p := filepath.Join(root, e.Name())
		ident(p)
		if e.IsDir() && !markers(p) {
			return "", false
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// cachePath is the cache file of this bundles root in the per-user cache
// folder (round2-decisions.md 2: in every mode, never in the runs folder),
// one file per root so that servers of different roots do not evict each
// other. "" when the cache is off.
func (s *Server) cachePath() string {
	if s.prep.cacheDir == "" {
		return ""
	}
	abs, err := filepath.Abs(s.opts.Bundles)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(s.prep.cacheDir, strings.TrimSuffix(cacheName, ".json")+"-"+hex.EncodeToString(sum[:8])+".json")
}

// prepareCacheDir creates the cache folder 0700 and checks it is a real
// folder, not a symlink, with no group or other permission bits. A folder
// that fails is not used (and not changed: round2-decisions.md 23).
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

// loadCache returns the cached workflows for key, or nil on a miss.
func (s *Server) loadCache(key string) []*workflow {
	p := s.cachePath()
	if p == "" {
		return nil
	}
	data, err := readRegular(p, 64<<20)
	if err != nil {
		return nil
	}
	var c cacheFile
	if json.Unmarshal(data, &c) != nil || c.V != 1 || c.Key != key {
		return nil
	}
	ws := make([]*workflow, 0, len(c.Workflows))
	for _, cw := range c.Workflows {
		if !workflowIDRE().MatchString(cw.ID) {
			return nil
		}
		w := &workflow{id: cw.ID, baseID: cw.BaseID, dir: cw.Dir, available: cw.Available, errClass: cw.ErrClass,
			params: cw.Params, stepCount: cw.StepCount, schemaVersion: cw.SchemaVersion, contentDigest: cw.ContentDigest,
			slug: filepath.Base(cw.Dir)}
		if !w.available {
			e := w.errClass
			w.loadErr = &e
		}
		ws = append(ws, w)
	}
	return ws
}

// storeCache writes the discovery result (best effort).
func (s *Server) storeCache(key string, ws []*workflow) {
	c := cacheFile{V: 1, Key: key, Workflows: make([]cachedWorkflow, 0, len(ws))}
	for _, w := range ws {
		if w.encrypted {
			return
		}
		c.Workflows = append(c.Workflows, cachedWorkflow{ID: w.id, BaseID: w.baseID, Dir: w.dir, Available: w.available,
			ErrClass: w.errClass, Params: w.params, StepCount: w.stepCount, SchemaVersion: w.schemaVersion, ContentDigest: w.contentDigest})
	}
	data, err := json.Marshal(c)
	if err != nil {
		return
	}
	p := s.cachePath()
	if p == "" || !prepareCacheDir(filepath.Dir(p)) {
		return
	}
	_ = atomicfile.WriteFile(p, data, 0o600)
}
