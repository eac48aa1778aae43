//go:build unix

package fsutil

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type sysRoot struct {
	fd int
}

func openSysRoot(dir string) (sysRoot, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return sysRoot{}, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return sysRoot{fd: fd}, nil
}

func (s sysRoot) close() error { return unix.Close(s.fd) }

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the folder rel beneath the root without following any
// link; with create, missing folders are made with perm. The caller closes
// the returned descriptor (which may be a dup of the root's).
func (r *Root) openDir(rel string, create bool, perm fs.FileMode, op string) (int, error) {
	if rel == "." {
		return unix.Dup(r.sys.fd)
	}
	if fd, err, ok := openBeneath(r.sys.fd, rel); ok {
		if err == nil {
			return fd, nil
		}
		if !(create && errors.Is(err, unix.ENOENT)) && !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.EXDEV) {
			return -1, &fs.PathError{Op: "open", Path: r.display(rel), Err: err}
		}
		// Missing folders to make, or a link or non-folder to name: walk.
	}
	return r.walk(rel, create, perm, op)
}

// walk opens rel component by component with O_NOFOLLOW|O_DIRECTORY.
func (r *Root) walk(rel string, create bool, perm fs.FileMode, op string) (int, error) {
	cur, err := unix.Dup(r.sys.fd)
	if err != nil {
		return -1, err
	}
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		next, err := unix.Openat(cur, p, dirFlags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(cur, p, uint32(perm.Perm())); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(cur, p, dirFlags, 0)
			}
		}
		if err != nil {
			here := strings.Join(parts[:i+1], "/")
			var st unix.Stat_t
			if serr := unix.Fstatat(cur, p, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
				switch st.Mode & unix.S_IFMT {
				case unix.S_IFLNK:
					unix.Close(cur)
					return -1, &LinkError{Op: op, Path: r.display(here)}
				case unix.S_IFDIR:
				default:
					unix.Close(cur)
					return -1, &fs.PathError{Op: op, Path: r.display(here), Err: ErrNotDir}
				}
			}
			unix.Close(cur)
			return -1, &fs.PathError{Op: op, Path: r.display(here), Err: err}
		}
		unix.Close(cur)
		cur = next
	}
	return cur, nil
}

// parent opens rel's parent folder (made when create) and returns it with
// rel's base name.
func (r *Root) parent(rel string, create bool, op string) (int, string, error) {
	rel, err := clean(rel)
	if err != nil {
		return -1, "", err
	}
	if rel == "." {
		return -1, "", errors.New("the root itself cannot be the target")
	}
	dir, base := split(rel)
	fd, err := r.openDir(dir, create, 0o755, op)
	if err != nil {
		return -1, "", err
	}
	return fd, base, nil
}

func (r *Root) linkOrPathErr(op, rel string, pfd int, base string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return &LinkError{Op: op, Path: r.display(rel)}
	}
	return &fs.PathError{Op: op, Path: r.display(rel), Err: err}
}

// MkdirAll makes rel and any missing parents with perm, refusing any link.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	rel, err := clean(rel)
	if err != nil {
		return err
	}
	fd, err := r.openDir(rel, true, perm, "write")
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// Mkdir makes the folder rel (its parent must exist).
func (r *Root) Mkdir(rel string, perm fs.FileMode) error {
	pfd, base, err := r.parent(rel, false, "write")
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, base, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: r.display(rel), Err: err}
	}
	return nil
}

// MkdirTemp makes a new private (0700) folder named prefix+random inside the
// folder dir (made if missing) and returns its path relative to the root.
func (r *Root) MkdirTemp(dir, prefix string) (string, error) {
	dir, err := clean(dir)
	if err != nil {
		return "", err
	}
	if err := creating(); err != nil {
		return "", err
	}
	fd, err := r.openDir(dir, true, 0o755, "write")
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	for range 100 {
		name := prefix + randomSuffix()
		err := unix.Mkdirat(fd, name, 0o700)
		if err == nil {
			rel := joinRel(dir, name)
			r.track(rel)
			return rel, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", &fs.PathError{Op: "mkdir", Path: r.display(dir + "/" + name), Err: err}
		}
	}
	return "", &fs.PathError{Op: "mkdir", Path: r.display(dir), Err: unix.EEXIST}
}

// OpenFile opens rel with flag (os.O_*) and perm, never following a link
// anywhere in rel (O_NOFOLLOW on the final entry: a link there is a
// [*LinkError]). Opens are non-blocking when only reading (a FIFO cannot
// hang), never acquire a controlling terminal, and refuse non-regular files
// unless the caller asked for a folder. Missing parents are not made.
func (r *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	pfd, base, err := r.parent(rel, false, "open")
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	fl := flag | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK
	fd, err := unix.Openat(pfd, base, fl, uint32(perm.Perm()))
	if err != nil {
		op := "open"
		if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE) != 0 {
			op = "write"
		}
		return nil, r.linkOrPathErr(op, rel, pfd, base, err)
	}
	f := os.NewFile(uintptr(fd), r.Join(rel))
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() && !(fi.IsDir() && flag&(os.O_WRONLY|os.O_RDWR) == 0) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: r.display(rel), Err: ErrNotRegular}
	}
	// Back to blocking mode for regular files (no effect on reads, but
	// keeps the descriptor ordinary for the caller).
	unix.SetNonblock(fd, false)
	return f, nil
}

// Lstat describes rel without following a final link (and refuses a link
// among its ancestors).
func (r *Root) Lstat(rel string) (fs.FileInfo, error) { return r.lstat(rel, "open") }

func (r *Root) lstat(rel, op string) (fs.FileInfo, error) {
	rel, err := clean(rel)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		var st unix.Stat_t
		if err := unix.Fstat(r.sys.fd, &st); err != nil {
			return nil, err
		}
		return newFileInfo(".", &st), nil
	}
	pfd, base, err := r.parent(rel, false, op)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: r.display(rel), Err: err}
	}
	return newFileInfo(base, &st), nil
}

// Readlink returns the target of the link rel.
func (r *Root) Readlink(rel string) (string, error) {
	pfd, base, err := r.parent(rel, false, "open")
	if err != nil {
		return "", err
	}
	defer unix.Close(pfd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(pfd, base, buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: r.display(rel), Err: err}
	}
	return string(buf[:n]), nil
}

// Symlink makes rel a symbolic link to target (the target is not checked;
// the link is the final entry and is never followed by this package).
func (r *Root) Symlink(target, rel string) error {
	pfd, base, err := r.parent(rel, false, "write")
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Symlinkat(target, pfd, base); err != nil {
		return &fs.PathError{Op: "symlink", Path: r.display(rel), Err: err}
	}
	return nil
}

// Rename renames the final entry oldRel to newRel (both beneath the root; a
// link as either final entry is renamed or replaced itself, never followed).
func (r *Root) Rename(oldRel, newRel string) error {
	defer r.untrack(oldRel)
	opfd, obase, err := r.parent(oldRel, false, "rename")
	if err != nil {
		return err
	}
	defer unix.Close(opfd)
	npfd, nbase, err := r.parent(newRel, false, "rename")
	if err != nil {
		return err
	}
	defer unix.Close(npfd)
	if err := unix.Renameat(opfd, obase, npfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: r.display(oldRel), New: r.display(newRel), Err: err}
	}
	return nil
}

// publish moves the file oldRel to newRel only if newRel does not exist
// (an error wrapping [fs.ErrExist] then), in one step where the system
// has one (Linux renameat2), else by a hard link (the caller removes
// oldRel afterwards; until then the file has two links).
func (r *Root) publish(oldRel, newRel string) error {
	opfd, obase, err := r.parent(oldRel, false, "link")
	if err != nil {
		return err
	}
	defer unix.Close(opfd)
	npfd, nbase, err := r.parent(newRel, false, "link")
	if err != nil {
		return err
	}
	defer unix.Close(npfd)
	if err, ok := renameNoReplace(opfd, obase, npfd, nbase); ok {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: r.display(oldRel), New: r.display(newRel), Err: err}
		}
		return nil
	}
	if err := unix.Linkat(opfd, obase, npfd, nbase, 0); err != nil {
		return &os.LinkError{Op: "link", Old: r.display(oldRel), New: r.display(newRel), Err: err}
	}
	return nil
}

// Link makes newRel a new hard link to the file oldRel (both beneath the
// root). A link as oldRel is linked itself, never followed; when newRel
// exists the error wraps [fs.ErrExist].
func (r *Root) Link(oldRel, newRel string) error {
	opfd, obase, err := r.parent(oldRel, false, "link")
	if err != nil {
		return err
	}
	defer unix.Close(opfd)
	npfd, nbase, err := r.parent(newRel, false, "link")
	if err != nil {
		return err
	}
	defer unix.Close(npfd)
	if err := unix.Linkat(opfd, obase, npfd, nbase, 0); err != nil {
		return &os.LinkError{Op: "link", Old: r.display(oldRel), New: r.display(newRel), Err: err}
	}
	return nil
}

// Remove removes the file, link or empty folder rel.
func (r *Root) Remove(rel string) error {
	pfd, base, err := r.parent(rel, false, "delete")
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	err = unix.Unlinkat(pfd, base, 0)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM) {
		if err2 := unix.Unlinkat(pfd, base, unix.AT_REMOVEDIR); err2 == nil || !errors.Is(err2, unix.ENOTDIR) {
			err = err2
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: r.display(rel), Err: err}
	}
	return nil
}

// RemoveAll removes rel and, when it is a real folder, everything in it.
// A link (final or deeper) is removed itself, never followed. A missing rel
// is not an error.
func (r *Root) RemoveAll(rel string) error {
	defer r.untrack(rel)
	pfd, base, err := r.parent(rel, false, "delete")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := removeAllAt(pfd, base); err != nil && !errors.Is(err, unix.ENOENT) {
		return &fs.PathError{Op: "remove", Path: r.display(rel), Err: err}
	}
	return nil
}

func removeAllAt(pfd int, name string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(pfd, name, 0)
	}
	fd, err := unix.Openat(pfd, name, dirFlags, 0)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(fd), name)
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if e := removeAllAt(fd, n); e != nil && !errors.Is(e, unix.ENOENT) {
				d.Close()
				return e
			}
		}
		if err == io.EOF || len(names) == 0 {
			break
		}
		if err != nil {
			d.Close()
			return err
		}
		// Entries were removed while reading: restart from the top so
		// none is skipped.
		if _, err := d.Seek(0, io.SeekStart); err != nil {
			d.Close()
			return err
		}
	}
	d.Close()
	return unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR)
}

// Chmod sets rel's permission bits without following a final link.
func (r *Root) Chmod(rel string, perm fs.FileMode) error {
	pfd, base, err := r.parent(rel, false, "write")
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return r.linkOrPathErr("write", rel, pfd, base, err)
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: r.display(rel), Err: err}
	}
	return nil
}

type fileInfo struct {
	name string
	st   unix.Stat_t
}

func newFileInfo(name string, st *unix.Stat_t) *fileInfo { return &fileInfo{name: name, st: *st} }

func (f *fileInfo) Name() string { return f.name }
func (f *fileInfo) Size() int64  { return f.st.Size }
func (f *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(f.st.Mode & 0o777)
	switch f.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if f.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if f.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if f.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
func (f *fileInfo) ModTime() time.Time { return time.Unix(int64(f.st.Mtim.Sec), int64(f.st.Mtim.Nsec)) }
func (f *fileInfo) IsDir() bool        { return f.Mode().IsDir() }
func (f *fileInfo) Sys() any           { return (*syscall.Stat_t)(nil) }
