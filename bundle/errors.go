package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrorKind names why a bundle failed, in the vocabulary of the Flow vectors
// (docs/bundle.md, Error kinds) plus the Go-only kinds [KindUnsafePath],
// [KindKDFCostRejected] and [KindUnreadable]. The zero value means "no error".
type ErrorKind string

// The error kinds. Each has exactly one sentinel error (see [ErrContentDigestMismatch] …).
const (
	KindContentDigestMismatch ErrorKind = "content_digest_mismatch"
	KindAssetHashMismatch     ErrorKind = "asset_hash_mismatch"
	KindAssetMissing          ErrorKind = "asset_missing"
	KindDecryptFailed         ErrorKind = "decrypt_failed"
	KindMissingKey            ErrorKind = "missing_key"
	KindInvalidJSON           ErrorKind = "invalid_json"
	KindNotABundle            ErrorKind = "not_a_bundle"
	KindUnsafePath            ErrorKind = "unsafe_path"
	KindKDFCostRejected       ErrorKind = "kdf_cost_rejected"
	// KindUnreadable is Go-only: a file or folder
	// of the bundle (the folder itself, a marker, the sidecar manifest, a
	// listed asset, a sealed template or a folder above one) exists but the
	// process may not read it (permission denied). Flow reports such a file
	// as missing or corrupt; saying so is more useful.
	KindUnreadable ErrorKind = "unreadable"
)

// ErrBundle is the root of the package's sentinel tree: every error that
// describes a bad bundle (as opposed to a bad option or an unusable discovery
// root) matches it with [errors.Is].
var ErrBundle = errors.New("bundle")

// One sentinel per [ErrorKind]. Each wraps [ErrBundle]. Errors returned by this
// package (and stored in [Bundle.Err]) match exactly one of them.
var (
	// ErrContentDigestMismatch: the recomputed content digest differs from the manifest's.
	ErrContentDigestMismatch = fmt.Errorf("%w: content digest mismatch", ErrBundle)
	// ErrAssetHashMismatch: a listed asset's SHA-256 differs from file_hashes.
	ErrAssetHashMismatch = fmt.Errorf("%w: asset hash mismatch", ErrBundle)
	// ErrAssetMissing: a listed asset is absent or not a regular file.
	ErrAssetMissing = fmt.Errorf("%w: asset missing", ErrBundle)
	// ErrDecryptFailed: a sealed container is malformed or fails authentication
	// (wrong passphrase and tampering are deliberately indistinguishable).
	ErrDecryptFailed = fmt.Errorf("%w: decryption failed", ErrBundle)
	// ErrMissingKey: the bundle is sealed and no passphrase is configured.
	ErrMissingKey = fmt.Errorf("%w: missing key", ErrBundle)
	// ErrInvalidJSON: workflow or manifest JSON is malformed or violates the
	// input rules of docs/bundle.md, Canonical JSON (BOM, invalid UTF-8, lone surrogate,
	// duplicate keys, non-object top level, non-finite number).
	ErrInvalidJSON = fmt.Errorf("%w: invalid json", ErrBundle)
	// ErrNotABundle: the folder holds no regular workflow.json or workflow.json.enc.
	ErrNotABundle = fmt.Errorf("%w: not a bundle", ErrBundle)
	// ErrUnsafePath: a symlink was met, or a file_hashes key could escape the bundle.
	ErrUnsafePath = fmt.Errorf("%w: unsafe path", ErrBundle)
	// ErrKDFCostRejected: a container asks for scrypt parameters outside the cap
	// (N a power of two in [2, 2^18], 1 ≤ r ≤ 32, 1 ≤ p ≤ 16, 128·N·r ≤ 256 MiB).
	ErrKDFCostRejected = fmt.Errorf("%w: kdf cost rejected", ErrBundle)
	// ErrUnreadable: a file or folder of the bundle exists but cannot be read
	// (permission denied).
	ErrUnreadable = fmt.Errorf("%w: unreadable", ErrBundle)
)

// ErrRoot is returned by [Discover] and [Load] when the path itself cannot be
// used (it does not exist, is not a folder, or cannot be read). It is not a
// bundle failure and has no [ErrorKind].
var ErrRoot = errors.New("unusable bundle root")

// ErrOption is wrapped by errors from invalid or conflicting [Option]s.
var ErrOption = errors.New("invalid bundle option")

// ErrNotLoaded is returned by [Bundle.Protected] when the bundle failed to load.
var ErrNotLoaded = errors.New("bundle not loaded")

var kindSentinel = map[ErrorKind]error{
	KindContentDigestMismatch: ErrContentDigestMismatch,
	KindAssetHashMismatch:     ErrAssetHashMismatch,
	KindAssetMissing:          ErrAssetMissing,
	KindDecryptFailed:         ErrDecryptFailed,
	KindMissingKey:            ErrMissingKey,
	KindInvalidJSON:           ErrInvalidJSON,
	KindNotABundle:            ErrNotABundle,
	KindUnsafePath:            ErrUnsafePath,
	KindKDFCostRejected:       ErrKDFCostRejected,
	KindUnreadable:            ErrUnreadable,
}

// Sentinel returns the sentinel error of k, or nil for an unknown kind.
func (k ErrorKind) Sentinel() error { return kindSentinel[k] }

// Error is the typed failure stored in [Bundle.Err]. Its text describes
// structure only (which check, which bundle-relative file, a byte offset);
// it never contains names, intents, recorded values, the passphrase or
// absolute paths.
type Error struct {
	Kind   ErrorKind // why the bundle failed
	Detail string    // structural detail, safe to log locally
	cause  error     // optional low-level cause (already sanitized)
}

func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Is reports whether target is this error's kind sentinel or [ErrBundle].
func (e *Error) Is(target error) bool {
	return target == ErrBundle || target == kindSentinel[e.Kind]
}

// Unwrap returns the sanitized low-level cause, if any.
func (e *Error) Unwrap() error { return e.cause }

// KindOf returns the [ErrorKind] of err, or "" when err is nil or not a bundle failure.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	for k, s := range kindSentinel {
		if errors.Is(err, s) {
			return k
		}
	}
	return ""
}

func newErr(kind ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// sanitize keeps only what went wrong from an fs error (the errno, or the
// reason of internal/util/fsutil), never the operation's path: an absolute path
// is protected, and a bundle-relative one is named by the caller's detail
// when it is safe to show (see [safeRel]). Message texts therefore never
// carry a path placeholder or a path with its leading "/" cut off.
func sanitize(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		return se.Err
	}
	return err
}

// isPermission reports a permission error (EACCES, EPERM).
func isPermission(err error) bool { return errors.Is(err, fs.ErrPermission) }

// safeRel reports whether rel consists only of characters that cannot carry
// free text ([A-Za-z0-9._/-], at most 200 bytes). File names are structure,
// but a file_hashes key is attacker-controlled text.
func safeRel(rel string) bool {
	if len(rel) == 0 || len(rel) > 200 {
		return false
	}
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

// assetRef names listed asset i for a message: its index, and its path
// when [safeRel] allows showing it.
func assetRef(i int, rel string) string {
	if safeRel(rel) {
		return fmt.Sprintf("listed asset %d (%s)", i, rel)
	}
	return fmt.Sprintf("listed asset %d", i)
}

// fileRef names a bundle file by its relative path when [safeRel] allows
// it, else by what it is.
func fileRef(rel, what string) string {
	if safeRel(rel) {
		return rel
	}
	return what
}
