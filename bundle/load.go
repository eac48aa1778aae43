package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

const (
	markerPlain  = "workflow.json"
	markerSealed = "workflow.json.enc"
	sidecarName  = "manifest.json"
	templatesDir = "templates"

	// maxJSONSize caps workflow.json, manifest.json and sealed containers read
	// into memory; a larger file is refused rather than exhausting memory.
	maxJSONSize = 256 << 20
)

var (
	errIsSymlink  = errors.New("is a symlink")
	errNotRegular = errors.New("not a regular file")
)

// loader loads bundles; one per worker goroutine (it owns a copy buffer).
type loader struct {
	cfg *config
	lim limiter
	buf []byte
	// The worker's JSON documents (workflow, sidecar manifest) and canonical
	// buffer, reused from bundle to bundle.
	wdoc, mdoc pyjson.Doc
	canon      []byte
}

func newLoader(cfg *config, lim limiter) *loader {
	if cfg.ctx == nil {
		cfg.ctx = context.Background()
	}
	return &loader{cfg: cfg, lim: lim, buf: make([]byte, 64<<10)}
}

// hashSized streams the regular file f, whose stat'ed size is size, into w
// through the loader's buffer and returns the bytes read: at most size+1, so a
// file that grows while being read is noticed (the caller's hash or length
// check then fails) and never read without bound. A regular file that returns
// fewer bytes than asked has reached its end, and the last request asks for
// one byte more than remains, so a file that did not change costs no extra
// read to see EOF. (io.CopyBuffer would hand *os.File to its WriteTo, which
// allocates a fresh 32 KiB buffer per file.)
func (l *loader) hashSized(w io.Writer, f *os.File, size int64) (int64, error) {
	var total int64
	done := l.cfg.ctx.Done()
	for total <= size {
		select {
		case <-done:
			return total, l.cfg.ctx.Err()
		default:
		}
		want := min(int64(len(l.buf)), size-total+1)
		k, err := f.Read(l.buf[:want])
		if k > 0 {
			w.Write(l.buf[:k])
			total += int64(k)
		}
		switch {
		case err == io.EOF:
			return total, nil
		case err != nil:
			return total, err
		case total >= size && int64(k) < want:
			return total, nil // the short read is the end
		case k == 0:
			return total, io.ErrNoProgress
		}
	}
	return total, nil
}

// readSized reads the regular file f of stat'ed size into a new buffer of
// size+1 bytes (the spare byte notices growth), normally in one read: a short
// read at the stat'ed size is the end of the file.
func readSized(f *os.File, size int64) ([]byte, error) {
	data := make([]byte, size+1)
	n := 0
	for n < len(data) {
		k, err := f.Read(data[n:])
		n += k
		switch {
		case err == io.EOF:
			return data[:n], nil
		case err != nil:
			return data[:n], err
		case int64(n) >= size && n < len(data):
			return data[:n], nil
		case k == 0:
			return data[:n], io.ErrNoProgress
		}
	}
	return data[:n], nil
}

func (b *Bundle) fail(e *Error) {
	b.Integrity = Failed
	b.ErrorKind = e.Kind
	b.Err = e
	b.ContentDigest = ""
	b.StepCount, b.ActionStepCount, b.SchemaVersion = 0, 0, 0
	b.Params, b.LegacyParams, b.ParamSpecNames, b.SecretParams = nil, nil, nil, nil
	b.protected = nil
	b.ManifestSource, b.CompilerVersion, b.Provenance = "", "", nil
	if !b.Encrypted {
		b.BundleVersion = ""
	}
}

type markerState int

const (
	markerAbsent markerState = iota
	markerRegular
	markerOther      // exists but is not a regular file
	markerSymlink    // refused
	markerUnreadable // permission denied
	markerError      // cannot be inspected
)

func lstatMarker(path string) markerState {
	fi, err := os.Lstat(path)
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return markerAbsent
	case err != nil && isPermission(err):
		return markerUnreadable
	case err != nil:
		return markerError
	case fi.Mode()&fs.ModeSymlink != 0:
		return markerSymlink
	case fi.Mode().IsRegular():
		return markerRegular
	default:
		return markerOther
	}
}

// load verifies one folder (docs/bundle.md, "Verifying a plaintext bundle"
// and "Sealed bundles").
func (l *loader) load(dir string) *Bundle {
	b := &Bundle{Dir: dir}
	plain := lstatMarker(filepath.Join(dir, markerPlain))
	sealed := lstatMarker(filepath.Join(dir, markerSealed))
	plainOK, sealedOK := plain == markerRegular, sealed == markerRegular
	b.Encrypted = sealedOK
	var err *Error
	switch {
	case plain == markerSymlink || sealed == markerSymlink:
		err = newErr(KindUnsafePath, "marker file is a symlink")
	case plain == markerUnreadable || sealed == markerUnreadable:
		err = newErr(KindUnreadable, "the bundle folder cannot be read (permission denied)")
	case plain == markerError || sealed == markerError:
		err = newErr(KindNotABundle, "marker file cannot be inspected")
	case !plainOK && !sealedOK:
		err = newErr(KindNotABundle, "no regular workflow.json or workflow.json.enc")
	case sealedOK:
		// If both exist Flow reads the .enc one.
		err = l.loadSealed(b, dir, plainOK)
	default:
		err = l.loadPlain(b, dir)
	}
	if err != nil {
		b.fail(err)
	}
	// The opaque id (docs/bundle.md, Workflow ids): over the content digest
	// when it was checked, else the fallback over the marker files.
	if b.Integrity == Verified || b.Integrity == ContentVerified {
		b.BaseID = workflowID([]byte(b.ContentDigest))
	} else {
		b.setFallbackID(plainOK, sealedOK)
	}
	b.ID = b.BaseID
	return b
}

// loadPlain verifies a plaintext bundle (docs/bundle.md, "Verifying a
// plaintext bundle").
func (l *loader) loadPlain(b *Bundle, dir string) *Error {
	data, e := readCapped(filepath.Join(dir, markerPlain), markerPlain)
	if e != nil {
		return e
	}
	d := &l.wdoc
	if err := parseObject(d, data); err != nil {
		return &Error{Kind: KindInvalidJSON, Detail: markerPlain, cause: err}
	}
	man, e := l.readManifest(b, dir)
	if e != nil {
		return e
	}
	digest, done, e := l.checkContent(b, man)
	if done {
		return e
	}
	cache := map[string]bool{}
	for i, fe := range man.entries {
		if err := l.cfg.ctx.Err(); err != nil {
			return &Error{Kind: KindAssetMissing, Detail: "verification canceled", cause: err}
		}
		if e := l.checkAsset(dir, fe, i, cache); e != nil {
			return e
		}
	}
	b.Integrity = Verified
	b.BundleVersion = "sha256:" + digest
	return nil
}

// loadSealed verifies a sealed bundle (docs/bundle.md, Sealed bundles).
func (l *loader) loadSealed(b *Bundle, dir string, plainToo bool) *Error {
	if !plainToo {
		// The keyless inventory hash (docs/bundle.md, bundle_version);
		// computed before anything else so
		// a symlink anywhere in the bundle is refused first.
		bv, e := l.sealedBundleVersion(dir)
		if e != nil {
			return e
		}
		b.BundleVersion = bv
	}
	if l.cfg.key == "" {
		return newErr(KindMissingKey, "sealed bundle and no passphrase configured")
	}
	pass := []byte(l.cfg.key)
	data, e := readCapped(filepath.Join(dir, markerSealed), markerSealed)
	if e != nil {
		return e
	}
	c, err := parseContainer(data)
	if err != nil {
		return err.(*Error)
	}
	l.lim.acquire()
	plain, err := c.open(pass, AADWorkflow)
	l.lim.release()
	if err != nil {
		return err.(*Error)
	}
	d := &l.wdoc
	if err := parseObject(d, plain); err != nil {
		return &Error{Kind: KindInvalidJSON, Detail: "decrypted " + markerPlain, cause: err}
	}
	man, e := l.readManifest(b, dir)
	if e != nil {
		return e
	}
	var hashes map[string]string
	if l.cfg.level == Full {
		if hashes, e = l.decryptTemplates(dir, pass); e != nil {
			return e
		}
	}
	digest, done, e := l.checkContent(b, man)
	if done {
		return e
	}
	for i, fe := range man.entries {
		got, ok := hashes[fe.rel]
		if !ok {
			return newErr(KindAssetMissing, "%s has no sealed ciphertext", assetRef(i, fe.rel))
		}
		if got != fe.hex {
			return newErr(KindAssetHashMismatch, "%s: sealed plaintext hash mismatch", assetRef(i, fe.rel))
		}
	}
	b.Integrity = Verified
	if plainToo {
		b.BundleVersion = "sha256:" + digest
	}
	return nil
}

// readManifest reads the metadata and the manifest of the workflow document
// in l.wdoc (plaintext and sealed alike) and checks the manifest's entry keys
// when it has a content digest.
func (l *loader) readManifest(b *Bundle, dir string) (*manifest, *Error) {
	d := &l.wdoc
	if e := b.readMetadata(d); e != nil {
		return nil, e
	}
	man, e := l.pickManifest(d, dir)
	if e != nil {
		return nil, e
	}
	b.applyManifest(man)
	if man != nil && man.digest != "" {
		if e := checkKeys(man.entries); e != nil {
			return nil, e
		}
	}
	return man, nil
}

// checkContent is the content step of both procedures: without a
// manifest digest the bundle is legacy_unverified; otherwise the
// recomputed content digest must equal the manifest's, and at the metadata
// level that makes it content_verified. done reports that b's integrity is
// settled (or e says why not); otherwise the assets are checked next.
func (l *loader) checkContent(b *Bundle, man *manifest) (digest string, done bool, e *Error) {
	if man == nil || man.digest == "" {
		b.Integrity = LegacyUnverified
		return "", true, nil
	}
	digest, l.canon = contentDigest(&l.wdoc, man.filesDoc, man.files, l.canon)
	if digest != man.digest {
		return "", true, newErr(KindContentDigestMismatch, "recomputed digest differs from the manifest")
	}
	b.ContentDigest = digest
	if l.cfg.level == Metadata {
		b.Integrity = ContentVerified
		return digest, true, nil
	}
	return digest, false, nil
}

// readCapped reads a regular, non-symlink file of at most maxJSONSize bytes,
// never following a symlink or blocking on a fifo swapped in after an lstat.
// Failures are invalid_json (the content cannot be read as JSON), unsafe_path
// for a symlink, or unreadable when permission is denied.
func readCapped(path, rel string) ([]byte, *Error) {
	f, fi, err := openNoFollow(path)
	if errors.Is(err, errIsSymlink) {
		return nil, newErr(KindUnsafePath, "%s is a symlink", rel)
	}
	if errors.Is(err, errNotRegular) {
		return nil, newErr(KindInvalidJSON, "%s is not a regular file", rel)
	}
	if isPermission(err) {
		return nil, newErr(KindUnreadable, "%s cannot be read (permission denied)", fileRef(rel, "a bundle file"))
	}
	if err != nil {
		return nil, &Error{Kind: KindInvalidJSON, Detail: "cannot read " + fileRef(rel, "a bundle file"), cause: sanitize(err)}
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return nil, newErr(KindInvalidJSON, "%s is not a regular file", rel)
	}
	if fi.Size() > maxJSONSize {
		return nil, newErr(KindInvalidJSON, "%s exceeds %d bytes", rel, maxJSONSize)
	}
	// Read exactly the stat'ed size plus one byte, to notice growth.
	data, err := readSized(f, fi.Size())
	if isPermission(err) {
		return nil, newErr(KindUnreadable, "%s cannot be read (permission denied)", fileRef(rel, "a bundle file"))
	}
	if err != nil {
		return nil, &Error{Kind: KindInvalidJSON, Detail: "cannot read " + fileRef(rel, "a bundle file"), cause: sanitize(err)}
	}
	if len(data) > maxJSONSize {
		return nil, newErr(KindInvalidJSON, "%s exceeds %d bytes", rel, maxJSONSize)
	}
	return data, nil
}

// fileEntry is one file_hashes entry, in stored order.
type fileEntry struct {
	rel string
	hex string
}

type manifest struct {
	source   string
	digest   string
	filesDoc *pyjson.Doc // the document holding files
	files    pyjson.V    // the stored file_hashes object, hashed as is; None is {}
	entries  []fileEntry
	prov     *Provenance
}

// pickManifest applies the precedence rule (docs/bundle.md, Manifests): a
// non-null embedded
// manifest is the only one used; else manifest.json; else none (legacy).
func (l *loader) pickManifest(d *pyjson.Doc, dir string) (*manifest, *Error) {
	if m := d.Get(d.Root(), "manifest"); !d.IsNull(m) {
		return parseManifest(d, m, "embedded")
	}
	path := filepath.Join(dir, sidecarName)
	switch lstatMarker(path) {
	case markerAbsent:
		return nil, nil
	case markerSymlink:
		return nil, newErr(KindUnsafePath, "manifest.json is a symlink")
	case markerUnreadable:
		return nil, newErr(KindUnreadable, "manifest.json cannot be read (permission denied)")
	case markerRegular:
	default:
		return nil, newErr(KindInvalidJSON, "manifest.json is not a regular file")
	}
	data, e := readCapped(path, sidecarName)
	if e != nil {
		return nil, e
	}
	md := &l.mdoc
	if err := parseObject(md, data); err != nil {
		return nil, &Error{Kind: KindInvalidJSON, Detail: sidecarName, cause: err}
	}
	return parseManifest(md, md.Root(), "sidecar")
}

func parseManifest(d *pyjson.Doc, m pyjson.V, source string) (*manifest, *Error) {
	if d.Kind(m) != pyjson.Object {
		return nil, newErr(KindInvalidJSON, "%s manifest is not an object", source)
	}
	man := &manifest{source: source, filesDoc: d, files: pyjson.None}
	switch cd := d.Get(m, "content_digest"); {
	case d.IsNull(cd):
	case d.Kind(cd) == pyjson.String:
		man.digest = d.Str(cd)
	default:
		return nil, newErr(KindInvalidJSON, "%s manifest content_digest is not a string", source)
	}
	if fh := d.Get(m, "file_hashes"); !d.IsNull(fh) {
		if d.Kind(fh) != pyjson.Object {
			return nil, newErr(KindInvalidJSON, "%s manifest file_hashes is not an object", source)
		}
		man.files = fh
		man.entries = make([]fileEntry, 0, d.Len(fh))
		for k, v := range d.Members(fh) {
			if d.Kind(v) != pyjson.String {
				return nil, newErr(KindInvalidJSON, "%s manifest file_hashes value is not a string", source)
			}
			man.entries = append(man.entries, fileEntry{rel: d.Str(k), hex: d.Str(v)})
		}
	}
	if p := d.Get(m, "provenance"); d.Kind(p) == pyjson.Object {
		man.prov = readProvenance(d, p)
	}
	return man, nil
}

func readProvenance(d *pyjson.Doc, p pyjson.V) *Provenance {
	str := func(k string) string { return d.Str(d.Get(p, k)) }
	pr := &Provenance{
		CompilerVersion:                  str("compiler_version"),
		SourceRecordingSHA256:            str("source_recording_sha256"),
		CompilerConfigSHA256:             str("compiler_config_sha256"),
		CreatedAt:                        str("created_at"),
		PolicyName:                       str("policy_name"),
		CertificationStatus:              str("certification_status"),
		CertifiedAt:                      str("certified_at"),
		ExpiresAt:                        str("expires_at"),
		CertificationInvalidatedAt:       str("certification_invalidated_at"),
		CertificationInvalidationReason:  str("certification_invalidation_reason"),
		HasGovernedAuthorizationTemplate: !d.IsNull(d.Get(p, "governed_authorization_template")),
	}
	if v := d.Get(p, "certified"); d.Kind(v) == pyjson.Bool {
		c := d.True(v)
		pr.Certified = &c
	}
	return pr
}

func (b *Bundle) applyManifest(man *manifest) {
	if man == nil {
		return
	}
	b.ManifestSource = man.source
	if man.prov != nil {
		b.Provenance = man.prov
		b.CompilerVersion = man.prov.CompilerVersion
	}
}

// checkKeys refuses file_hashes keys that could escape the bundle, before
// any listed file is read:
// absolute, containing "..", containing "\", or with an empty segment.
func checkKeys(entries []fileEntry) *Error {
	for i, fe := range entries {
		k := fe.rel
		// Beyond the spec's list: NUL (never a path), and the platform's own
		// notion of absolute or volume-relative paths (C:x on Windows).
		bad := k == "" || k[0] == '/' || strings.Contains(k, "..") || strings.ContainsAny(k, "\\\x00") ||
			strings.Contains(k, "//") || k[len(k)-1] == '/' || filepath.IsAbs(k) || filepath.VolumeName(k) != "" ||
			(runtime.GOOS == "windows" && strings.Contains(k, ":"))
		if bad {
			return newErr(KindUnsafePath, "file_hashes key %d is not a safe relative path", i)
		}
	}
	return nil
}

// checkAsset verifies one plaintext listed asset without following any
// symlink: every folder component is lstat'ed (once per bundle) and the file
// itself is opened without following a symlink or blocking on a fifo.
func (l *loader) checkAsset(dir string, fe fileEntry, i int, dirOK map[string]bool) *Error {
	ref := assetRef(i, fe.rel)
	parts := strings.Split(fe.rel, "/")
	cur := dir
	for _, part := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, part)
		if dirOK[cur] {
			continue
		}
		fi, err := os.Lstat(cur)
		switch {
		case err != nil && isPermission(err):
			return newErr(KindUnreadable, "%s cannot be read: a folder above it denies permission", ref)
		case err != nil:
			return newErr(KindAssetMissing, "%s is missing", ref)
		case fi.Mode()&fs.ModeSymlink != 0:
			return newErr(KindUnsafePath, "%s is under a symlink", ref)
		case !fi.IsDir():
			return newErr(KindAssetMissing, "%s is missing", ref)
		}
		dirOK[cur] = true
	}
	f, fi, err := openNoFollow(filepath.Join(cur, parts[len(parts)-1]))
	switch {
	case errors.Is(err, errIsSymlink):
		return newErr(KindUnsafePath, "%s is a symlink", ref)
	case errors.Is(err, errNotRegular):
		return newErr(KindAssetMissing, "%s is not a regular file", ref)
	case errors.Is(err, fs.ErrNotExist):
		return newErr(KindAssetMissing, "%s is missing", ref)
	case isPermission(err):
		return newErr(KindUnreadable, "%s cannot be read (permission denied)", ref)
	case err != nil:
		return &Error{Kind: KindAssetMissing, Detail: ref + " cannot be read", cause: sanitize(err)}
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return newErr(KindAssetMissing, "%s is not a regular file", ref)
	}
	h := sha256.New()
	if _, err := l.hashSized(h, f, fi.Size()); err != nil {
		if isPermission(err) {
			return newErr(KindUnreadable, "%s cannot be read (permission denied)", ref)
		}
		return &Error{Kind: KindAssetMissing, Detail: ref + " cannot be read", cause: sanitize(err)}
	}
	var sum [sha256.Size]byte
	if hex.EncodeToString(h.Sum(sum[:0])) != fe.hex {
		return newErr(KindAssetHashMismatch, "%s hash mismatch", ref)
	}
	return nil
}

// decryptTemplates decrypts every templates/**/*.enc, listed or not, in
// parallel under the limiter and returns plaintext SHA-256 hex by path
// without ".enc". Plaintexts are hashed and dropped, never kept or written.
func (l *loader) decryptTemplates(dir string, pass []byte) (map[string]string, *Error) {
	type job struct {
		rel, path string
		hex       string
		err       *Error
	}
	var jobs []*job
	var walk func(abs, rel string) *Error
	walk = func(abs, rel string) *Error {
		entries, err := os.ReadDir(abs)
		if isPermission(err) {
			return newErr(KindUnreadable, "%s cannot be listed (permission denied)", fileRef(rel, "a folder under templates"))
		}
		if err != nil {
			return &Error{Kind: KindDecryptFailed, Detail: "cannot list " + fileRef(rel, "a folder under templates"), cause: sanitize(err)}
		}
		for _, e := range entries {
			r, a := rel+"/"+e.Name(), filepath.Join(abs, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				return newErr(KindUnsafePath, "symlink under templates")
			case e.IsDir():
				if err := walk(a, r); err != nil {
					return err
				}
			case e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".enc"):
				jobs = append(jobs, &job{rel: strings.TrimSuffix(r, ".enc"), path: a})
			}
		}
		return nil
	}
	tdir := filepath.Join(dir, templatesDir)
	if fi, err := os.Lstat(tdir); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, newErr(KindUnsafePath, "templates is a symlink")
		case fi.IsDir():
			if e := walk(tdir, templatesDir); e != nil {
				return nil, e
			}
		}
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Hold a token for the whole job so at most `workers` ciphertexts
			// and scrypt buffers are in memory at once.
			l.lim.acquire()
			defer l.lim.release()
			if err := l.cfg.ctx.Err(); err != nil {
				j.err = &Error{Kind: KindDecryptFailed, Detail: "verification canceled", cause: err}
				return
			}
			data, e := readCapped(j.path, j.rel+".enc")
			if e != nil {
				if e.Kind != KindUnsafePath && e.Kind != KindUnreadable {
					e = &Error{Kind: KindDecryptFailed, Detail: e.Detail, cause: e.cause}
				}
				j.err = e
				return
			}
			c, err := parseContainer(data)
			if err != nil {
				j.err = err.(*Error)
				return
			}
			plain, err := c.open(pass, AADTemplate)
			if err != nil {
				j.err = err.(*Error)
				return
			}
			sum := sha256.Sum256(plain)
			j.hex = hex.EncodeToString(sum[:])
		}()
	}
	wg.Wait()
	out := make(map[string]string, len(jobs))
	for _, j := range jobs {
		if j.err != nil {
			return nil, j.err
		}
		out[j.rel] = j.hex
	}
	return out, nil
}

// sealedBundleVersion computes Flow's keyless bundle_version of a sealed
// bundle (docs/bundle.md, bundle_version): every regular file under dir, sorted component-wise, hashed as
// u64be(len(path)) ‖ path ‖ u64be(len(bytes)) ‖ bytes. A symlink anywhere is
// refused (unsafe_path). An unreadable file leaves no bundle_version ("").
func (l *loader) sealedBundleVersion(dir string) (string, *Error) {
	type file struct {
		rel   string
		parts []string
		abs   string
	}
	var files []file
	unreadable := false
	var walk func(abs, rel string) *Error
	walk = func(abs, rel string) *Error {
		entries, err := os.ReadDir(abs)
		if err != nil {
			unreadable = true
			return nil
		}
		for _, e := range entries {
			r := e.Name()
			if rel != "" {
				r = rel + "/" + e.Name()
			}
			a := filepath.Join(abs, e.Name())
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				return newErr(KindUnsafePath, "symlink in sealed bundle")
			case e.IsDir():
				if err := walk(a, r); err != nil {
					return err
				}
			case e.Type().IsRegular():
				files = append(files, file{rel: r, parts: strings.Split(r, "/"), abs: a})
			}
		}
		return nil
	}
	if e := walk(dir, ""); e != nil {
		return "", e
	}
	if unreadable {
		return "", nil
	}
	slices.SortFunc(files, func(a, b file) int { return slices.Compare(a.parts, b.parts) })
	h := sha256.New()
	var n [8]byte
	putU64 := func(v uint64) {
		for i := 7; i >= 0; i-- {
			n[i] = byte(v)
			v >>= 8
		}
		h.Write(n[:])
	}
	for _, f := range files {
		fh, fi, err := openNoFollow(f.abs)
		if errors.Is(err, errIsSymlink) {
			return "", newErr(KindUnsafePath, "symlink in sealed bundle")
		}
		if err != nil {
			return "", nil
		}
		if !fi.Mode().IsRegular() {
			fh.Close()
			return "", nil
		}
		putU64(uint64(len(f.rel)))
		h.Write([]byte(f.rel))
		putU64(uint64(fi.Size()))
		got, err := l.hashSized(h, fh, fi.Size())
		fh.Close()
		if err != nil || got != fi.Size() {
			return "", nil // changed while reading
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// workflowID is the Python agent's opaque id over material (docs/bundle.md,
// Workflow ids).
func workflowID(material []byte) string {
	h := sha256.New()
	h.Write([]byte("openadapt-agent-workflow-id-v1\x00"))
	h.Write(material)
	return "workflow_" + hex.EncodeToString(h.Sum(nil))[:24]
}

// setFallbackID sets BaseID from the fallback material: the raw SHA-256 over, for each
// marker that is a regular non-symlink file, its name then its bytes.
func (b *Bundle) setFallbackID(plainOK, sealedOK bool) {
	h := sha256.New()
	for _, m := range []struct {
		name string
		ok   bool
	}{{markerPlain, plainOK}, {markerSealed, sealedOK}} {
		if !m.ok {
			continue
		}
		f, fi, err := openNoFollow(filepath.Join(b.Dir, m.name))
		if err != nil {
			continue
		}
		if fi.Mode().IsRegular() {
			h.Write([]byte(m.name))
			io.Copy(h, f)
		}
		f.Close()
	}
	b.BaseID = workflowID(h.Sum(nil))
	b.ID = b.BaseID
}
