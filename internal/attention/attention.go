// Package attention is the Needs Attention feature: the read-only queue of
// paused runs and the one procedure that decides on them.
//
// The queue: [List] and [Get] read Flow's run folders natively and return
// PHI-safe items that match Flow's console.attention projection field by
// field, except headline and next_action, which are this project's own copy
// ([Headline], [NextAction]). The runs root must be a plain directory; the
// scan never follows a symlink, never leaves the root, reads only regular
// files and caps every read. An item carries opaque ids, enums, counts, ISO
// timestamps and the public, non-authorizing capability digest; never a
// name, reason, observed text, parameter, path or key material. Projector
// failures on one run directory skip that directory; they never fail the
// call.
//
// The decisions: a [Decider] checks the item, asks the caller's [Confirm],
// dispatches through the Flow helper and classifies Flow's answer into a
// closed [Kind]; [Decider.Replay] answers a retry of a decision Flow
// journaled. serve's attended tools and the terminal `attention` command
// both use it (docs/attended.md).
//
// Stable API: [List], [Get], [ForRun], [ID], [ValidID], [RunDir], [Item],
// [Capability], [Headline], [NextAction], [ErrNotFound], [Decider],
// [Request], [Result], [Kind], [Confirm], [Helper].
package attention

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// ErrNotFound is the single not-found answer of [Get]: a malformed id, an
// unknown or closed item, a missing or symlinked runs root.
var ErrNotFound = errors.New("attention item not found")

// Item is one Needs Attention card (docs/attended.md, "The queue"). Field
// order and JSON names are the wire order.
type Item struct {
	ID                   string      `json:"id"`
	CreatedAt            *string     `json:"created_at"`
	Category             string      `json:"category"`
	Headline             string      `json:"headline"`
	NextAction           string      `json:"next_action"`
	Status               string      `json:"status"`
	HumanRequired        bool        `json:"human_required"`
	DurablyPaused        bool        `json:"durably_paused"`
	EncryptedPause       bool        `json:"encrypted_pause"`
	ObservedTextCount    int         `json:"observed_text_count"`
	CompletedIntentCount int         `json:"completed_intent_count"`
	BeforeArtifactID     *string     `json:"before_artifact_id"`
	AfterArtifactID      *string     `json:"after_artifact_id"`
	Capability           *Capability `json:"capability"`
}

// Capability is the public summary of a verified signed pause capability. Digest is what an MCP caller echoes back; it is
// metadata, not authority: Flow re-validates everything on any action.
type Capability struct {
	Digest                 string   `json:"digest"`
	ExpiresAt              string   `json:"expires_at"`
	AllowedActions         []string `json:"allowed_actions"`
	DeliveryState          string   `json:"delivery_state"`
	SourceIdentityRequired bool     `json:"source_identity_required"`
	SourceIdentityStatus   *string  `json:"source_identity_status"`
}

// ID returns the attention id of a run directory: the first 24 hex
// characters of SHA-256 over its POSIX path relative to the runs root, "."
// for the root itself (e.g. "run-0001" → "302aa61015d20d93ce981a9d").
func ID(rel string) string {
	rel = filepath.ToSlash(rel)
	if rel == "" {
		rel = "."
	}
	sum := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(sum[:])[:24]
}

// List scans root and returns the current items, newest created_at first
// (null last, ties in scan order). A missing, unreadable or symlinked root
// gives an empty, non-nil list.
func List(root string) []Item {
	s, ok := newScanner(root)
	if !ok {
		return []Item{}
	}
	items := []Item{}
	for _, rel := range s.runDirs() {
		if it, ok := s.project(rel); ok {
			items = append(items, it)
		}
	}
	// "items sorted by created_at descending (null sorts as the empty
	// string, last); ties keep scan order".
	slices.SortStableFunc(items, func(a, b Item) int {
		return strings.Compare(deref(b.CreatedAt), deref(a.CreatedAt))
	})
	return items
}

// Get returns the current item with this id. Ids are resolved only by a
// fresh scan, so a crafted id can never name a path: anything that is not a
// current item, including a malformed id, gives [ErrNotFound]. The result
// equals the same item of a [List] taken at the same moment.
func Get(root, id string) (Item, error) {
	if !ValidID(id) {
		return Item{}, ErrNotFound
	}
	s, ok := newScanner(root)
	if !ok {
		return Item{}, ErrNotFound
	}
	for _, rel := range s.runDirs() {
		if ID(rel) != id {
			continue
		}
		if it, ok := s.project(rel); ok {
			return it, nil
		}
	}
	return Item{}, ErrNotFound
}

// ForRun returns the item of one run directory, root/rel (for an agent run,
// rel is its run id), or nil when that directory is not a run directory of
// the scan or produces no item. serve attaches it to halt results.
func ForRun(root, rel string) *Item {
	rel = filepath.Clean(filepath.FromSlash(rel))
	if rel == "." || filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	depth := len(strings.Split(filepath.ToSlash(rel), "/"))
	if depth > 2 {
		return nil
	}
	s, ok := newScanner(root)
	if !ok {
		return nil
	}
	// The directory and, at depth 2, its parent must be plain directories,
	// and the parent must not itself be a run directory.
	if depth == 2 {
		parent := filepath.Dir(rel)
		if !plainDir(filepath.Join(root, parent)) || isRunDir(filepath.Join(root, parent)) {
			return nil
		}
	}
	if isRunDir(root) || !plainDir(filepath.Join(root, rel)) || !isRunDir(filepath.Join(root, rel)) {
		return nil
	}
	it, ok := s.project(filepath.ToSlash(rel))
	if !ok {
		return nil
	}
	return &it
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// scanner holds a validated runs root.
type scanner struct {
	root     string // as given
	resolved string // symlinks resolved
}

func newScanner(root string) (*scanner, bool) {
	if !plainDir(root) {
		return nil, false
	}
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, false
	}
	return &scanner{root: root, resolved: resolved}, true
}

// plainDir: a directory per lstat, not a symlink.
func plainDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsDir()
}

// isRunDir: the directory holds a regular, non-symlink report.json.
func isRunDir(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, "report.json"))
	return err == nil && fi.Mode().IsRegular()
}

// maxEntries bounds how many directory entries one listing reads.
const maxEntries = 100000

// runDirs walks breadth-first to depth 2, never entering symlinks; a run
// directory is not searched further. The result is in Flow's component-wise
// path order, as slash-separated relative paths ("." for the root).
func (s *scanner) runDirs() []string {
	if isRunDir(s.root) {
		return []string{"."}
	}
	var found [][]string
	level := [][]string{{}}
	for depth := 1; depth <= 2; depth++ {
		var next [][]string
		for _, parent := range level {
			dir := filepath.Join(append([]string{s.root}, parent...)...)
			f, err := fsutil.OpenDir(dir)
			if err != nil {
				continue
			}
			entries, _ := f.ReadDir(maxEntries)
			f.Close()
			for _, e := range entries {
				if e.Type()&fs.ModeType != fs.ModeDir {
					continue // files, symlinks, devices
				}
				parts := append(slices.Clone(parent), e.Name())
				if isRunDir(filepath.Join(dir, e.Name())) {
					found = append(found, parts)
				} else {
					next = append(next, parts)
				}
			}
		}
		level = next
	}
	slices.SortFunc(found, slices.Compare[[]string])
	out := make([]string, len(found))
	for i, parts := range found {
		out[i] = strings.Join(parts, "/")
	}
	return out
}

// inside checks that dir resolves to root/rel, strictly inside the root
// (or the root itself for ".").
func (s *scanner) inside(rel string) (string, bool) {
	dir := filepath.Join(s.root, filepath.FromSlash(rel))
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	if resolved != filepath.Join(s.resolved, filepath.FromSlash(rel)) {
		return "", false
	}
	return dir, true
}
