// Package verify checks a downloaded openadapt-agent release offline: the
// Sigstore signature over its checksums file first, then the sha256 of every
// artifact that file lists (docs/release.md, "Verifying a release").
//
// It is the one part of the release tooling that the shipped binary links
// (`openadapt-agent release verify`); the build and signing steps in
// internal/release run only with `go run`. The signing key or identity is
// always given by the caller: nothing in the release set is trusted to say
// who signed it.
package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
)

// MediaType identifies the verification result document.
const MediaType = "application/vnd.openadapt-agent.release-verification+json;version=1"

// Sentinel errors. Callers use errors.Is at any granularity.
var (
	// ErrInvalid is the root of every refusal of a release set.
	ErrInvalid = errors.New("release refused")
	// ErrChecksums reports a checksums file that cannot be read or does not
	// have the "<sha256>  <name>" form on every line.
	ErrChecksums = fmt.Errorf("%w: checksums file", ErrInvalid)
	// ErrSignature reports a signature bundle that is malformed or does not
	// verify over the checksums file with the given key or identity.
	ErrSignature = fmt.Errorf("%w: signature", ErrInvalid)
	// ErrDigestMismatch reports an artifact whose sha256 differs from its
	// line in the checksums file.
	ErrDigestMismatch = fmt.Errorf("%w: digest mismatch", ErrInvalid)
	// ErrMissing reports a listed artifact that is not in the folder (or is
	// not a regular file there).
	ErrMissing = fmt.Errorf("%w: artifact missing", ErrInvalid)
)

// Artifact status values of [ArtifactResult].
const (
	StatusOK             = "ok"
	StatusDigestMismatch = "digest_mismatch"
	StatusMissing        = "missing"
	StatusUnreadable     = "unreadable"
	// StatusSkipped is a missing artifact under [Options.IgnoreMissing].
	StatusSkipped = "skipped"
)

// Size caps. An artifact is at most a release archive or bundle; the
// checksums file lists a few dozen names.
var (
	checksumsLimit = fsutil.Limit{Kind: "checksums file", Max: 1 << 20}
	artifactLimit  = fsutil.Limit{Kind: "release artifact", Max: 2 << 30}
)

// Options configures [Verify].
type Options struct {
	// Sigstore names the signature bundle over the checksums file and the
	// key or the certificate identity to check it with. BundlePath is
	// required.
	Sigstore ledger.SigstoreOptions
	// Dir is the folder holding the artifacts. Default: the folder of the
	// checksums file.
	Dir string
	// IgnoreMissing skips listed artifacts that are not in Dir (someone who
	// downloaded only the archive for their platform), like
	// `sha256sum --ignore-missing`. At least one artifact must be there.
	IgnoreMissing bool
}

// ArtifactResult is the check of one listed artifact.
type ArtifactResult struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	// Status is "ok", "digest_mismatch", "missing", "unreadable" or
	// "skipped" (missing, with [Options.IgnoreMissing]).
	Status string `json:"status"`
}

// Result is the verification document.
type Result struct {
	MediaType string `json:"mediaType"`
	// Checksums is the base name of the checksums file and ChecksumsSHA256
	// its digest ("sha256:<hex>").
	Checksums       string `json:"checksums"`
	ChecksumsSHA256 string `json:"checksums_sha256"`
	// Signature is the Sigstore check of the checksums file.
	Signature *ledger.KeylessResult `json:"signature"`
	// Artifacts has one entry per line of the checksums file, in its order.
	Artifacts []ArtifactResult `json:"artifacts"`
	// Verified is true when the signature verified and every artifact is ok
	// (or skipped, with [Options.IgnoreMissing], as long as one is ok).
	Verified bool `json:"verified"`
}

// Verify checks the release set described by the checksums file at path.
//
// The signature is checked first; when it fails, no artifact is read and
// the error wraps [ErrSignature] (or [ledger.ErrOption] for missing or
// conflicting key and identity options). A checksums file that is not a
// list of "<sha256>  <name>" lines returns an error wrapping [ErrChecksums].
// Otherwise every listed artifact is hashed and the result has one entry
// per artifact; when any is not ok, the result is returned together with an
// error wrapping [ErrDigestMismatch] or [ErrMissing].
func Verify(ctx context.Context, path string, o Options) (*Result, error) {
	if err := o.Sigstore.Validate(); err != nil {
		return nil, err
	}
	data, err := fsutil.ReadFile(ctx, path, checksumsLimit, fsutil.NoFollow)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrChecksums, filepath.Base(path), pathless(err))
	}
	sum := sha256.Sum256(data)
	res := &Result{
		MediaType:       MediaType,
		Checksums:       filepath.Base(path),
		ChecksumsSHA256: "sha256:" + hex.EncodeToString(sum[:]),
		Artifacts:       []ArtifactResult{},
	}
	if err := checkBundleEncoding(ctx, o.Sigstore.BundlePath); err != nil {
		return nil, err
	}
	sig, err := ledger.VerifyArtifact(ctx, ledger.ArtifactBytes(data), o.Sigstore)
	if err != nil {
		if errors.Is(err, ledger.ErrOption) || ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	res.Signature = sig
	entries, err := ParseChecksums(data)
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		dir = filepath.Dir(path)
	}
	var firstErr error
	checked := 0
	for _, e := range entries {
		got, err := hashFile(ctx, filepath.Join(dir, e.Name))
		a := ArtifactResult{Name: e.Name, SHA256: e.SHA256, Status: StatusOK}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, fs.ErrNotExist) && o.IgnoreMissing:
			a.Status = StatusSkipped
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, fsutil.ErrSymlink), errors.Is(err, fsutil.ErrNotRegular):
			a.Status = StatusMissing
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s", ErrMissing, e.Name)
			}
		case err != nil:
			a.Status = StatusUnreadable
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s cannot be read: %v", ErrMissing, e.Name, pathless(err))
			}
		case got != e.SHA256:
			a.Status = StatusDigestMismatch
			if firstErr == nil {
				firstErr = fmt.Errorf("%w: %s", ErrDigestMismatch, e.Name)
			}
		}
		if a.Status != StatusSkipped {
			checked++
		}
		res.Artifacts = append(res.Artifacts, a)
	}
	if firstErr == nil && checked == 0 {
		firstErr = fmt.Errorf("%w: none of the %d listed artifacts is in the folder", ErrMissing, len(entries))
	}
	if firstErr != nil {
		return res, firstErr
	}
	res.Verified = true
	return res, nil
}

// Entry is one line of a checksums file.
type Entry struct {
	SHA256 string // lowercase hex
	Name   string // a plain file name in the release folder
}

// ParseChecksums parses a checksums file as GoReleaser and sha256sum write
// it: one "<64 lowercase hex>  <name>" line per artifact, each ending in
// LF. Names are plain file names (no folder, no "..", no control
// characters) and appear once. Anything else returns an error wrapping
// [ErrChecksums] that names the line.
func ParseChecksums(data []byte) ([]Entry, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrChecksums)
	}
	if data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("%w: the last line does not end in a newline", ErrChecksums)
	}
	seen := map[string]bool{}
	var out []Entry
	for n, raw := range bytes.Split(data[:len(data)-1], []byte{'\n'}) {
		line := string(raw)
		hexPart, name, ok := strings.Cut(line, "  ")
		if !ok || len(hexPart) != 64 || !isLowerHex(hexPart) {
			return nil, fmt.Errorf("%w: line %d is not \"<sha256>  <name>\"", ErrChecksums, n+1)
		}
		if !plainName(name) {
			return nil, fmt.Errorf("%w: line %d does not name a plain file", ErrChecksums, n+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: line %d lists %s a second time", ErrChecksums, n+1, name)
		}
		seen[name] = true
		out = append(out, Entry{SHA256: hexPart, Name: name})
	}
	return out, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// plainName accepts a file name that stays in its folder on every system:
// no separators, no "." or "..", no leading or trailing space, no control
// characters, valid UTF-8.
func plainName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 255 || !utf8.ValidString(s) ||
		strings.TrimSpace(s) != s || strings.ContainsAny(s, `/\:`) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// hashFile returns the lowercase hex sha256 of the regular file at p, never
// following a final symbolic link.
func hashFile(ctx context.Context, p string) (string, error) {
	f, _, err := fsutil.Open(p, artifactLimit, fsutil.NoFollow)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fsutil.CtxReader(ctx, io.LimitReader(f, artifactLimit.Max+1))); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkBundleEncoding refuses a signature bundle whose signature or digest
// is not in canonical base64. The protobuf JSON decoder accepts base64 with
// non-zero padding bits, so a changed last character can decode to the same
// bytes: such a bundle would still verify although its text was altered.
// Here every byte of those fields counts. An unreadable or unparseable
// bundle is left to the Sigstore check, which names the problem.
func checkBundleEncoding(ctx context.Context, p string) error {
	data, err := fsutil.ReadFile(ctx, p, fsutil.SigstoreBundle)
	if err != nil {
		return nil
	}
	var b struct {
		MessageSignature *struct {
			MessageDigest *struct {
				Digest string `json:"digest"`
			} `json:"messageDigest"`
			Signature string `json:"signature"`
		} `json:"messageSignature"`
		DSSEEnvelope *struct {
			Payload    string `json:"payload"`
			Signatures []struct {
				Sig string `json:"sig"`
			} `json:"signatures"`
		} `json:"dsseEnvelope"`
	}
	if json.Unmarshal(data, &b) != nil {
		return nil
	}
	var fields []string
	if m := b.MessageSignature; m != nil {
		fields = append(fields, m.Signature)
		if m.MessageDigest != nil {
			fields = append(fields, m.MessageDigest.Digest)
		}
	}
	if d := b.DSSEEnvelope; d != nil {
		fields = append(fields, d.Payload)
		for _, s := range d.Signatures {
			fields = append(fields, s.Sig)
		}
	}
	for _, f := range fields {
		if _, err := base64.StdEncoding.Strict().DecodeString(f); err != nil {
			return fmt.Errorf("%w: bundle %s: a signature or digest is not canonical base64", ErrSignature, filepath.Base(p))
		}
	}
	return nil
}

// pathless drops the path from a *fs.PathError, so messages name files only
// by the base names the caller adds.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	if errors.Is(err, os.ErrNotExist) {
		return os.ErrNotExist
	}
	return err
}
