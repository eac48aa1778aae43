package skill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// FolderHash returns the skills lock file's folder hash of the folder rel
// beneath r (`computedHash` in a project lock, `skillFolderHash` in the
// global one), computed exactly as computeSkillFolderHash of the `skills`
// CLI 1.7.4 does (docs/skills.md, The lock): every regular file of the tree,
// skipping folders named .git or node_modules at any depth and anything
// that is neither a regular file nor a folder (links, FIFOs, devices: they
// are never opened), ordered by relative slash path with the root collation
// of Unicode (the CLI's String.prototype.localeCompare), then sha256 over
// each file's path followed by its bytes, with no separator, as lowercase
// hex.
//
// It returns "" (and no error) for a tree holding any path that is not
// printable ASCII (U+0020–U+007E): the CLI's ordering of such paths depends
// on its ICU version and locale, and control characters are ignorable in
// the collation, so two paths could tie and leave the order to readdir.
// Printable-ASCII paths never tie, and for them the root collation is the
// order of every untailored locale (en, sv, C, POSIX; a tailored locale
// such as da would order "aa" differently).
//
// Nothing beneath r is followed: a link among rel's ancestors is refused
// by r, and links inside the tree are skipped without being read.
func FolderHash(ctx context.Context, r *fsutil.Root, rel string) (string, error) {
	var files []string
	ascii := true
	var walk func(dir, prefix string) error
	walk = func(dir, prefix string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, err := r.OpenFile(dir, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.Join(dir), err)
		}
		for _, e := range ents {
			name := e.Name()
			if !printableASCII(name) {
				ascii = false
				return nil
			}
			switch t := e.Type(); {
			case t.IsDir():
				if name == ".git" || name == "node_modules" {
					continue
				}
				if err := walk(dir+"/"+name, prefix+name+"/"); err != nil {
					return err
				}
				if !ascii {
					return nil
				}
			case t.IsRegular():
				files = append(files, prefix+name)
			}
		}
		return nil
	}
	if err := walk(rel, ""); err != nil {
		return "", err
	}
	if !ascii {
		return "", nil
	}
	sortLocale(files)
	h := sha256.New()
	buf := make([]byte, 256<<10)
	for _, p := range files {
		io.WriteString(h, p)
		f, err := r.OpenFile(rel+"/"+p, os.O_RDONLY, 0)
		if err != nil {
			return "", err
		}
		_, err = io.CopyBuffer(h, fsutil.CtxReader(ctx, f), buf)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", r.Join(rel+"/"+p), err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// printableASCII reports whether s holds only U+0020–U+007E.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// rootCollator is built once: collate.New loads its tables lazily, and a
// Collator is not safe for concurrent use, hence the mutex.
var (
	rootCollatorOnce sync.Once
	rootCollator     *collate.Collator
	rootCollatorMu   sync.Mutex
)

// sortLocale orders paths as localeCompare does for printable ASCII: the
// root collation of Unicode (non-ignorable punctuation, tertiary strength).
func sortLocale(paths []string) {
	rootCollatorOnce.Do(func() { rootCollator = collate.New(language.Und) })
	rootCollatorMu.Lock()
	defer rootCollatorMu.Unlock()
	slices.SortStableFunc(paths, func(a, b string) int { return rootCollator.CompareString(a, b) })
}
