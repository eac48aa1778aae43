package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
)

// LinkError reports a symbolic link met beneath a [Root] where a folder or
// file was to be written, renamed or deleted. Path names the link as the
// user knows it (the root's label, if any, joined with the path below the
// root).
type LinkError struct {
	Op   string // "write", "delete", "rename", "open"
	Path string
}

func (e *LinkError) Error() string {
	op := e.Op
	if op == "" {
		op = "write"
	}
	return fmt.Sprintf("refusing to %s through symbolic link %s", op, e.Path)
}

// Unwrap makes errors.Is(err, ErrSymlink) true.
func (e *LinkError) Unwrap() error { return ErrSymlink }

// ErrNotDir is returned (wrapped) when a path component beneath a root
// exists and is not a folder.
var ErrNotDir = errors.New("not a directory")

// Root is a folder beneath which [Root]'s methods act without following any
// symbolic link. Paths given to its methods are relative to the root, use
// '/' or the OS separator, and may not contain ".." or be absolute; "." is
// the root itself. The root's own path was resolved once, at [OpenRoot].
type Root struct {
	dir   string // as given, cleaned
	label string // how errors name the root ("" = relative paths only)
	sys   sysRoot
}

// OpenRoot opens dir (which must exist and be a folder; the path itself may
// go through links: it is the user's choice) as a [Root]. label prefixes the
// paths in error messages; "" names them relative to the root.
func OpenRoot(dir, label string) (*Root, error) {
	dir = filepath.Clean(dir)
	s, err := openSysRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{dir: dir, label: label, sys: s}, nil
}

// Close releases the root.
func (r *Root) Close() error { return r.sys.close() }

// Dir returns the root folder's path as given to [OpenRoot].
func (r *Root) Dir() string { return r.dir }

// Join returns the OS path of rel beneath the root, for messages and
// results (never for opening: that would follow links).
func (r *Root) Join(rel string) string { return filepath.Join(r.dir, filepath.FromSlash(rel)) }

// display names rel for an error.
func (r *Root) display(rel string) string {
	if r.label == "" {
		return filepath.FromSlash(rel)
	}
	return filepath.Join(r.label, filepath.FromSlash(rel))
}

// clean validates and normalises rel to a slash path ("." for the root).
func clean(rel string) (string, error) {
	s := filepath.ToSlash(rel)
	if s == "" {
		return "", errors.New("empty path")
	}
	s = path.Clean(s)
	if s == "." {
		return s, nil
	}
	if !fs.ValidPath(s) || strings.HasPrefix(s, "/") {
		return "", fmt.Errorf("path %q is not inside the root", rel)
	}
	return s, nil
}

// split returns rel's parent ("." for a top-level entry) and base.
func split(rel string) (string, string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}

// randomSuffix is 12 hex digits.
func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CheckDir reports whether rel can be written into without a link: nil
// when rel is a real folder or does not exist yet (its existing ancestors
// being real folders), a [*LinkError] naming the first link, or an error
// wrapping [ErrNotDir]. Use it to refuse before changing anything.
func (r *Root) CheckDir(rel string) error {
	rel, err := clean(rel)
	if err != nil {
		return err
	}
	fi, err := r.lstat(rel, "write")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &LinkError{Op: "write", Path: r.display(rel)}
	case !fi.IsDir():
		return &fs.PathError{Op: "write", Path: r.display(rel), Err: ErrNotDir}
	}
	return nil
}
