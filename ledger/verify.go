package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// Reasons (docs/ledger.md, Verdicts).
const (
	ReasonMissing      = "missing"
	ReasonExpired      = "expired"
	ReasonRevoked      = "revoked"
	ReasonMismatched   = "mismatched"
	ReasonUnverifiable = "unverifiable"
)

// Verdicts.
const (
	VerdictActive    = "active"
	VerdictNotActive = "not_active"
)

// fail is a not_active outcome: a reason and a stable detail code.
type fail struct {
	reason string
	detail string
	cause  string // for ledger_row_unattributed: the underlying detail
}

func uv(d string) *fail { return &fail{reason: ReasonUnverifiable, detail: d} }
func mm(d string) *fail { return &fail{reason: ReasonMismatched, detail: d} }

// Source names the evidence to verify: the embedded snapshot or a path on
// disk (a ledger or projection file, or an evidence-root directory;
// docs/ledger.md, Inputs).
type Source struct {
	embedded bool
	path     string
}

// Embedded is the dated snapshot of OpenAdapt's published ledgers compiled
// into the binary ([SnapshotDate]), verified as an evidence root.
func Embedded() Source { return Source{embedded: true} }

// Path is a ledger or projection file, or an evidence-root directory.
func Path(p string) Source { return Source{path: p} }

// IsEmbedded reports whether s is the embedded snapshot.
func (s Source) IsEmbedded() bool { return s.embedded }

// Trust is the trust root: the set of pinned signer-registry identities
// (docs/ledger.md, Trust root). The zero value is not usable; start from
// [DefaultTrust].
type Trust struct {
	SignerRegistryIdentities []string
}

// DefaultTrust pins OpenAdapt's live signer registry
// ([PinnedSignerRegistryIdentity]).
func DefaultTrust() Trust {
	return Trust{SignerRegistryIdentities: []string{PinnedSignerRegistryIdentity}}
}

type config struct {
	at                time.Time
	atSet             bool
	evidenceRoot      string
	previous          [][]byte
	sigstore          *SigstoreOptions
	strict            bool
	requireActive     []string
	requireProduction bool
}

// Option configures a [Verifier]. Options validate their arguments and
// [NewVerifier] rejects conflicts.
type Option func(*config) error

// WithAt sets the evaluation instant T. It is truncated to whole seconds and
// converted to UTC. The default is the wall clock at each call.
func WithAt(t time.Time) Option {
	return func(c *config) error {
		if t.IsZero() {
			return fmt.Errorf("%w: zero evaluation time", ErrOption)
		}
		c.at, c.atSet = t.UTC().Truncate(time.Second), true
		return nil
	}
}

// WithEvidenceRoot sets the evidence-root directory used with a file source
// (default: the file's directory).
func WithEvidenceRoot(dir string) Option {
	return func(c *config) error {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			return fmt.Errorf("%w: evidence root is not a readable directory", ErrInput)
		}
		c.evidenceRoot = dir
		return nil
	}
}

// WithPreviousRegistry adds an older evidence-registry revision
// (docs/ledger.md, Registry).
// The file is read now; an unreadable file is an error wrapping [ErrInput].
func WithPreviousRegistry(paths ...string) Option {
	return func(c *config) error {
		for _, p := range paths {
			b, err := fsutil.ReadFile(context.Background(), p, fsutil.LedgerFile)
			if err != nil {
				return fmt.Errorf("%w: reading previous registry: %v", ErrInput, errors.Unwrap(err))
			}
			if _, err := parseJSON(b); err != nil {
				return fmt.Errorf("%w: previous registry is not json", ErrInput)
			}
			c.previous = append(c.previous, b)
		}
		return nil
	}
}

// WithStrict makes incomplete evidence fail the exit code (docs/ledger.md,
// Integrity and exit codes).
func WithStrict() Option {
	return func(c *config) error { c.strict = true; return nil }
}

// WithRequireActive requires each named target to be active.
func WithRequireActive(targets ...string) Option {
	return func(c *config) error {
		for _, t := range targets {
			if _, ok := targetContracts[t]; !ok {
				return fmt.Errorf("%w: unknown target %q (want one of %v)", ErrOption, t, targetNames)
			}
			if !contains(c.requireActive, t) {
				c.requireActive = append(c.requireActive, t)
			}
		}
		return nil
	}
}

// WithRequireProduction requires the product verdict to be production.
func WithRequireProduction() Option {
	return func(c *config) error { c.requireProduction = true; return nil }
}

// WithSigstore also verifies a Sigstore bundle over the ledger file's bytes
// (docs/ledger.md, Sigstore bundles over a ledger). The source must then be a
// file. A Sigstore pass never overrides a failed native check.
func WithSigstore(o SigstoreOptions) Option {
	return func(c *config) error {
		if err := o.validate(); err != nil {
			return err
		}
		c.sigstore = &o
		return nil
	}
}

// Verifier verifies OpenAdapt ledgers against a pinned trust root. It is
// safe for concurrent use.
type Verifier struct {
	pins map[string]bool
	list []string
	cfg  config
}

// NewVerifier returns a verifier for the trust root. It returns an error
// wrapping [ErrOption] for a malformed pin or an invalid option.
func NewVerifier(trust Trust, opts ...Option) (*Verifier, error) {
	v := &Verifier{pins: map[string]bool{}}
	if len(trust.SignerRegistryIdentities) == 0 {
		return nil, fmt.Errorf("%w: no pinned signer registry identity", ErrOption)
	}
	for _, p := range trust.SignerRegistryIdentities {
		if !isDigest(p) {
			return nil, fmt.Errorf("%w: signer registry identity must be sha256: and 64 lowercase hex digits", ErrOption)
		}
		if !v.pins[p] {
			v.pins[p] = true
			v.list = append(v.list, p)
		}
	}
	for _, o := range opts {
		if err := o(&v.cfg); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// run is the state of one verification.
type run struct {
	cfg      *config
	at       time.Time
	root     fs.FS
	pins     map[string]bool
	objCache map[string]cachedObject
	notes    []string

	regRaw    []byte
	reg       *registry
	regDetail string

	globalDone  bool
	global      string
	bound       map[string]bool
	sr          *signerRegistry
	srHistory   map[string]*signerRegistry
	authorityID string
	acceptedRev map[string]bool
	revoked     map[[2]string]bool
}

func (r *run) note(s string) {
	if !contains(r.notes, s) {
		r.notes = append(r.notes, s)
	}
}

func readFS(fsys fs.FS, name string) ([]byte, error) { return fs.ReadFile(fsys, name) }

// readReason is the path-free reason of a read failure: "not a regular
// file", the size cap, "no such file or directory", ….
func readReason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Document kinds.
const (
	DocReleaseLedger      = "release_ledger"
	DocWorkflowLedger     = "workflow_ledger"
	DocTargetProjection   = "target_projection"
	DocWorkflowProjection = "workflow_projection"
)

var wellKnown = []struct{ path, kind string }{
	{"production-lifecycle-admissions.json", DocReleaseLedger},
	{"production-workflow-admissions.json", DocWorkflowLedger},
	{"public/production-lifecycle.json", DocTargetProjection},
	{"public/production-workflow-admissions.json", DocWorkflowProjection},
}

var schemaKinds = map[string]string{
	schemaReleaseLedger:    DocReleaseLedger,
	schemaWorkflowLedger:   DocWorkflowLedger,
	schemaTargetProjection: DocTargetProjection,
	schemaWorkflowProj:     DocWorkflowProjection,
}

type document struct {
	name string // shown in output: root-relative path or base name
	kind string
	raw  []byte
	doc  map[string]any
	// outcomes
	detail  string // document-level failure detail, "" if none
	targets map[string]*targetState
	rows    []*rowState
}

// loadDocuments resolves the source into an evidence root and documents.
func (v *Verifier) loadDocuments(ctx context.Context, src Source) (fs.FS, []*document, error) {
	var root fs.FS
	var docs []*document
	add := func(name string, raw []byte) error {
		val, err := parseJSON(raw)
		if err != nil {
			return fmt.Errorf("%w: %s is not json", ErrInput, name)
		}
		m, ok := asObj(val)
		if !ok {
			return fmt.Errorf("%w: %s is not a json object", ErrUnknownDocument, name)
		}
		sv, _ := getStr(m, "schema_version")
		kind, ok := schemaKinds[sv]
		if !ok {
			return fmt.Errorf("%w: %s", ErrUnknownDocument, name)
		}
		docs = append(docs, &document{name: name, kind: kind, raw: raw, doc: m})
		return nil
	}
	fromRoot := func() error {
		for _, wk := range wellKnown {
			raw, err := fs.ReadFile(root, wk.path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%w: reading %s", ErrInput, wk.path)
			}
			if err := add(wk.path, raw); err != nil {
				return err
			}
		}
		if len(docs) == 0 {
			return ErrNoDocuments
		}
		return nil
	}
	if src.embedded {
		root = snapshotRoot()
		if err := fromRoot(); err != nil {
			return nil, nil, err
		}
		return root, docs, nil
	}
	if src.path == "" {
		return nil, nil, fmt.Errorf("%w: empty path", ErrInput)
	}
	fi, err := os.Stat(src.path)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrInput, filepath.Base(src.path), errors.Unwrap(err))
	}
	if fi.IsDir() {
		if v.cfg.sigstore != nil {
			return nil, nil, fmt.Errorf("%w: --bundle needs a ledger file, not a directory", ErrOption)
		}
		root = fsutil.DirFS(src.path, fsutil.LedgerFile)
		if v.cfg.evidenceRoot != "" {
			root = fsutil.DirFS(v.cfg.evidenceRoot, fsutil.LedgerFile)
		}
		docRoot := fsutil.DirFS(src.path, fsutil.LedgerFile)
		for _, wk := range wellKnown {
			raw, err := fs.ReadFile(docRoot, wk.path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%w: reading %s: %v", ErrInput, wk.path, readReason(err))
			}
			if err := add(wk.path, raw); err != nil {
				return nil, nil, err
			}
		}
		if len(docs) == 0 {
			return nil, nil, ErrNoDocuments
		}
		return root, docs, nil
	}
	raw, err := fsutil.ReadFile(ctx, src.path, fsutil.LedgerFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reading %s: %v", ErrInput, filepath.Base(src.path), readReason(err))
	}
	dir := filepath.Dir(src.path)
	if v.cfg.evidenceRoot != "" {
		dir = v.cfg.evidenceRoot
	}
	root = fsutil.DirFS(dir, fsutil.LedgerFile)
	if err := add(filepath.Base(src.path), raw); err != nil {
		return nil, nil, err
	}
	return root, docs, nil
}

func (v *Verifier) newRun(root fs.FS, at time.Time) *run {
	return &run{cfg: &v.cfg, at: at, root: root, pins: v.pins, objCache: map[string]cachedObject{}}
}

func (v *Verifier) evalTime() time.Time {
	if v.cfg.atSet {
		return v.cfg.at
	}
	return time.Now().UTC().Truncate(time.Second)
}

// Verify verifies every document of src (docs/ledger.md, What is checked)
// and returns the result.
// Verdicts are values in the result; the error is reserved for unreadable or
// unrecognised input (wrapping [ErrInput]) and cancellation.
func (v *Verifier) Verify(ctx context.Context, src Source) (*Result, error) {
	root, docs, err := v.loadDocuments(ctx, src)
	if err != nil {
		return nil, err
	}
	at := v.evalTime()
	r := v.newRun(root, at)
	var keyless *KeylessResult
	if v.cfg.sigstore != nil {
		if len(docs) != 1 {
			return nil, fmt.Errorf("%w: --bundle needs a ledger file", ErrOption)
		}
		kr, err := VerifyArtifact(ctx, ArtifactBytes(docs[0].raw), *v.cfg.sigstore)
		if err != nil && !errors.Is(err, ErrSigstoreVerification) {
			return nil, err
		}
		keyless = kr
	}
	for _, d := range docs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		switch d.kind {
		case DocReleaseLedger:
			d.targets = r.evalReleaseLedger(ctx, d)
		case DocTargetProjection:
			d.targets = r.evalTargetProjection(ctx, d)
		case DocWorkflowLedger:
			d.rows = r.evalWorkflowLedger(ctx, d)
		case DocWorkflowProjection:
			d.rows = r.evalWorkflowProjection(ctx, d)
		}
		if keyless != nil && !keyless.Verified {
			// The document fails as a whole, even when it has no rows.
			d.detail = "keyless_verification_failed"
			f := uv("keyless_verification_failed")
			for _, t := range d.targets {
				*t = targetState{fail: f, adm: t.adm}
			}
			for _, row := range d.rows {
				row.fail = f
			}
		}
	}
	res := r.assemble(src, docs, v.list)
	res.Keyless = keyless
	v.finish(res)
	return res, nil
}

// targetState is one target's outcome in one document.
type targetState struct {
	fail *fail      // nil: active
	adm  *admission // the latest row, when attributed
}

// rowState is one workflow row's outcome.
type rowState struct {
	fail       *fail
	adm        *admission // nil when the row could not be attributed
	attributed bool
	objectSHA  string
}

func allTargets(f *fail) map[string]*targetState {
	m := map[string]*targetState{}
	for _, t := range targetNames {
		m[t] = &targetState{fail: f}
	}
	return m
}

// releaseRow is an attributed release-ledger row.
type releaseRow struct {
	obj *object
	adm *admission
}

// evalReleaseLedger evaluates a release ledger: envelope, global checks,
// attribution, then each target (docs/ledger.md, Chain and lifecycle).
func (r *run) evalReleaseLedger(ctx context.Context, d *document) map[string]*targetState {
	doc := d.doc
	rows, ok := asList(doc["admissions"])
	if !exactKeys(doc, "$schema", "schema_version", "policy_sha256", "admissions") || !ok ||
		doc["$schema"] != "schemas/production-lifecycle-admissions.schema.json" || doc["policy_sha256"] != retainedPolicy {
		d.detail = "ledger_malformed"
		return allTargets(uv("ledger_malformed"))
	}
	refs, inline := 0, 0
	for _, row := range rows {
		m, _ := asObj(row)
		if _, v1 := m["admission_id"]; v1 {
			d.detail = "v1_row_unsupported"
			return allTargets(uv("v1_row_unsupported"))
		}
		if s, _ := getStr(m, "schema_version"); s == schemaRelease {
			inline++
		} else {
			refs++
		}
	}
	if refs > 0 && inline > 0 {
		d.detail = "ledger_malformed"
		return allTargets(uv("ledger_malformed"))
	}
	if len(rows) == 0 {
		return allTargets(&fail{reason: ReasonMissing, detail: "no_admission"})
	}
	if g := r.globals(ctx); g != "" {
		d.detail = g
		return allTargets(uv(g))
	}
	var attributed []releaseRow
	for _, row := range rows {
		var o *object
		var det string
		if inline > 0 {
			o, det = r.resolveInline(row)
		} else {
			o, det = r.resolveRef(row, kindRelease)
		}
		if det == "" {
			det = attributeRelease(o)
		}
		if det != "" {
			f := uv("ledger_row_unattributed")
			f.cause = det
			return allTargets(f)
		}
		attributed = append(attributed, releaseRow{obj: o, adm: attribution(o)})
	}
	return r.evalTargets(ctx, attributed)
}

// attributeRelease: a release row is attributed once its bytes parse to a
// JSON object whose target is one of the seven (docs/ledger.md, Chain and
// lifecycle).
func attributeRelease(o *object) string {
	if !o.parse() {
		return "object_not_canonical"
	}
	t, _ := getStr(o.doc, "target")
	if _, ok := targetContracts[t]; !ok {
		return "object_invalid"
	}
	return ""
}

// evalTargets groups attributed release rows by target and evaluates each
// target (docs/ledger.md, Chain and lifecycle).
func (r *run) evalTargets(ctx context.Context, rows []releaseRow) map[string]*targetState {
	by := map[string][]releaseRow{}
	for _, row := range rows {
		by[row.adm.target] = append(by[row.adm.target], row)
	}
	out := map[string]*targetState{}
	for _, t := range targetNames {
		out[t] = r.evalTarget(ctx, by[t])
	}
	return out
}

func (r *run) evalTarget(ctx context.Context, rows []releaseRow) *targetState {
	if len(rows) == 0 {
		return &targetState{fail: &fail{reason: ReasonMissing, detail: "no_admission"}}
	}
	latest := rows[len(rows)-1]
	st := &targetState{adm: latest.adm}
	// 1. Row by row: readback and canonical form, then content.
	for _, row := range rows {
		if d := readback(row.obj); d != "" {
			st.fail = uv(d)
			return st
		}
		if f := checkRelease(row.adm); f != nil {
			st.fail = f
			return st
		}
	}
	// 2. Chain.
	seen := map[string]bool{}
	for _, row := range rows {
		if seen[row.adm.admissionID] {
			st.fail = uv("duplicate_admission")
			return st
		}
		seen[row.adm.admissionID] = true
	}
	for k, row := range rows {
		if row.adm.sequence != int64(k+1) || (k > 0 && row.adm.previous != rows[k-1].adm.admissionID) {
			st.fail = uv("sequence_invalid")
			return st
		}
	}
	for k := 1; k < len(rows); k++ {
		if !rows[k].adm.issued.After(rows[k-1].adm.issued) {
			st.fail = uv("sequence_time_inversion")
			return st
		}
	}
	// 3. Bundles and trust binding; the latest row's bundle is required.
	var latestStmt *statement
	for k, row := range rows {
		s, f := r.verifyPair(ctx, row.obj, pairAdmission)
		if f != nil {
			if f.detail == "bundle_missing" && k < len(rows)-1 {
				continue
			}
			st.fail = f
			return st
		}
		if f := r.bindTrust(s); f != nil {
			st.fail = f
			return st
		}
		if k == len(rows)-1 {
			latestStmt = s
		}
	}
	// 4. Lifecycle of the latest row. Never fall back.
	st.fail = r.lifecycle(latest.obj, latest.adm, latestStmt)
	return st
}

// lifecycle is revoked → not_yet_valid → expired (docs/ledger.md, Time and
// Revocation).
func (r *run) lifecycle(o *object, a *admission, s *statement) *fail {
	kind := o.entry.Kind
	for _, x := range []string{o.entry.SemanticID, o.entry.SHA256, a.admissionID} {
		if r.revoked[[2]string{kind, x}] {
			return &fail{reason: ReasonRevoked, detail: "admission_revoked"}
		}
	}
	sg := s.signer
	cur := r.sr.signers[sg.KeyID]
	if r.revoked[[2]string{"qualification-signer-key", sg.PublicKeySHA}] || cur == nil || !cur.Active ||
		cur.PublicKeySHA != sg.PublicKeySHA {
		return &fail{reason: ReasonRevoked, detail: "signer_key_revoked"}
	}
	if r.at.Before(a.notBefore) || r.at.Before(s.notBefore) {
		return uv("not_yet_valid")
	}
	if (!a.expNull && !r.at.Before(a.expires)) || (!s.expNull && !r.at.Before(s.expires)) {
		return &fail{reason: ReasonExpired, detail: "expired"}
	}
	return nil
}

// resolveRef resolves a ledger row reference (docs/ledger.md, Rows) and
// loads its object.
func (r *run) resolveRef(v any, wantKind string) (*object, string) {
	m, ok := asObj(v)
	if !ok {
		return nil, "row_malformed"
	}
	if k, _ := getStr(m, "kind"); k != wantKind {
		return nil, "row_malformed"
	}
	ref, err := ParseReference(m)
	if err != nil {
		return nil, "row_malformed"
	}
	if !r.bound[pairKey(ref.RegistryRevision, ref.RegistryHeadSHA256)] {
		return nil, "registry_revision_unbound"
	}
	e := r.reg.byDigest[ref.RegistryEntrySHA256]
	if e == nil {
		return nil, "not_registered"
	}
	if !e.sameFields(ref.entry) {
		return nil, "registry_entry_differs"
	}
	return r.load(e)
}

// resolveInline resolves an inline release object (docs/ledger.md, Rows).
func (r *run) resolveInline(v any) (*object, string) {
	m, ok := asObj(v)
	if !ok {
		return nil, "row_malformed"
	}
	raw, err := canonicalLF(m)
	if err != nil {
		return nil, "object_not_canonical"
	}
	sha := sha256Digest(raw)
	e := r.reg.byObject[sha]
	if e == nil || e.Kind != kindRelease {
		return nil, "not_registered"
	}
	if disk, err := readFS(r.root, e.Path); err == nil && string(disk) != string(raw) {
		return nil, "object_digest_mismatch"
	}
	return &object{entry: e, raw: raw, doc: m, canonical: true}, ""
}

// evalTargetProjection evaluates a target projection like a release
// ledger, plus its static fields and its pins.
func (r *run) evalTargetProjection(ctx context.Context, d *document) map[string]*targetState {
	doc := d.doc
	malformed := func() map[string]*targetState {
		d.detail = "ledger_malformed"
		return allTargets(uv("ledger_malformed"))
	}
	if !exactKeys(doc, "$schema", "schema_version", "source", "policy_revision", "maximum_admission_days", "derivation", "targets") {
		return malformed()
	}
	wantDeriv := map[string]any{"mode": "latest_signed_admission_at_read_time", "static_production_state": false,
		"expired_or_revoked_latest_behavior": "no_production", "fallback_to_older_release": false}
	if !jsonEqual(doc["derivation"], wantDeriv) {
		return malformed()
	}
	src, _ := asObj(doc["source"])
	if src == nil || !exactKeys(src, "schema_version", "repository", "source_commit", "files") ||
		src["schema_version"] != "openadapt.production-lifecycle-source/v1" || src["repository"] != evidenceRepo {
		return malformed()
	}
	commit, _ := getStr(src, "source_commit")
	if !isHex40(commit) {
		return malformed()
	}
	files, _ := asObj(src["files"])
	if files == nil {
		return malformed()
	}
	for _, fv := range files {
		f, _ := asObj(fv)
		p, _ := getStr(f, "path")
		if f == nil || !exactKeys(f, "path", "sha256", "url") || !isDigest(fmt.Sprint(f["sha256"])) ||
			f["url"] != "https://raw.githubusercontent.com/OpenAdaptAI/.github/"+commit+"/"+p {
			return malformed()
		}
	}
	// An absent registry pin cannot pin this registry either.
	regPin, _ := asObj(files["evidence_registry"])
	targets, _ := asList(doc["targets"])
	byID := map[string]map[string]any{}
	for _, tv := range targets {
		t, _ := asObj(tv)
		id, _ := getStr(t, "id")
		if t == nil || byID[id] != nil {
			return malformed()
		}
		if _, ok := targetContracts[id]; !ok {
			return malformed()
		}
		byID[id] = t
	}
	if len(byID) != len(targetNames) || len(targets) != len(targetNames) {
		return malformed()
	}
	// The projection pins the registry bytes.
	if det := r.loadRegistry(); det == "registry_missing" {
		d.detail = det
		return allTargets(uv(det))
	}
	if regPin == nil || sha256Digest(r.regRaw) != regPin["sha256"] {
		d.detail = "registry_not_pinned_by_projection"
		return allTargets(uv("registry_not_pinned_by_projection"))
	}
	if g := r.globals(ctx); g != "" {
		d.detail = g
		return allTargets(uv(g))
	}
	static := projectionStatic()
	out := map[string]*targetState{}
	// Attribution of every history object first: an unattributable row makes
	// every target unverifiable.
	perTarget := map[string][]releaseRow{}
	var projFail = map[string]*fail{}
	for _, id := range targetNames {
		t := byID[id]
		want, _ := asObj(static[id])
		hist, okH := asList(t["admission_history"])
		latest, hasLatest := t["latest_admission"]
		staticOK := okH && hasLatest && len(t) == len(want)+2
		for k, wv := range want {
			if !jsonEqual(t[k], wv) {
				staticOK = false
			}
		}
		if staticOK {
			if len(hist) == 0 {
				staticOK = latest == nil
			} else {
				staticOK = jsonEqual(latest, hist[len(hist)-1])
			}
		}
		if !staticOK {
			projFail[id] = mm("projection_mismatch")
		}
		for _, h := range hist {
			o, det := r.resolveInline(h)
			if det == "" {
				det = attributeRelease(o)
			}
			if det != "" {
				f := uv("ledger_row_unattributed")
				f.cause = det
				return allTargets(f)
			}
			a := attribution(o)
			if a.target != id {
				projFail[id] = mm("projection_mismatch")
			}
			perTarget[id] = append(perTarget[id], releaseRow{obj: o, adm: a})
		}
	}
	for _, id := range targetNames {
		st := r.evalTarget(ctx, perTarget[id])
		if f := projFail[id]; f != nil {
			st.fail = f
		}
		out[id] = st
	}
	return out
}

// evalWorkflowLedger evaluates a workflow ledger, row by row.
func (r *run) evalWorkflowLedger(ctx context.Context, d *document) []*rowState {
	doc := d.doc
	rows, ok := asList(doc["admissions"])
	if !exactKeys(doc, "$schema", "schema_version", "policy_sha256", "admissions") || !ok ||
		doc["$schema"] != "schemas/production-workflow-admissions.schema.json" || doc["policy_sha256"] != retainedPolicy {
		d.detail = "ledger_malformed"
		return failRows(len(rows), uv("ledger_malformed"))
	}
	return r.evalWorkflowRows(ctx, d, rows, false)
}

func failRows(n int, f *fail) []*rowState {
	out := make([]*rowState, n)
	for i := range out {
		out[i] = &rowState{fail: f}
	}
	return out
}

var projectionCopyKeys = []string{"bundle_version", "evidence_class", "expires_at", "verdict"}

// evalWorkflowProjection evaluates a workflow projection: its rows, and
// the copies of object fields each row carries.
func (r *run) evalWorkflowProjection(ctx context.Context, d *document) []*rowState {
	doc := d.doc
	rows, ok := asList(doc["admissions"])
	src, _ := asObj(doc["source"])
	files, _ := asObj(src["files"])
	adm, _ := asObj(files["admissions"])
	p, _ := getStr(adm, "path")
	commit, _ := getStr(src, "source_commit")
	if !ok || !exactKeys(doc, "admissions", "policy_sha256", "schema_version", "source") || doc["policy_sha256"] != retainedPolicy ||
		src == nil || !exactKeys(src, "schema_version", "repository", "source_commit", "files") ||
		src["schema_version"] != "openadapt.production-workflow-admissions-source/v1" || src["repository"] != evidenceRepo ||
		!isHex40(commit) || files == nil || !exactKeys(files, "admissions") || adm == nil ||
		!exactKeys(adm, "path", "sha256", "url") || !isDigest(fmt.Sprint(adm["sha256"])) ||
		adm["url"] != "https://raw.githubusercontent.com/OpenAdaptAI/.github/"+commit+"/"+p {
		d.detail = "ledger_malformed"
		return failRows(len(rows), uv("ledger_malformed"))
	}
	if fs.ValidPath(p) {
		if raw, err := readFS(r.root, p); err == nil && sha256Digest(raw) != adm["sha256"] {
			d.detail = "projection_mismatch"
			return failRows(len(rows), mm("projection_mismatch"))
		}
	}
	return r.evalWorkflowRows(ctx, d, rows, true)
}

func (r *run) evalWorkflowRows(ctx context.Context, d *document, rows []any, projection bool) []*rowState {
	if len(rows) == 0 {
		return nil
	}
	if g := r.globals(ctx); g != "" {
		d.detail = g
		return failRows(len(rows), uv(g))
	}
	out := make([]*rowState, len(rows))
	seenIDs := map[string]bool{}
	for i, row := range rows {
		rs := &rowState{}
		out[i] = rs
		ref := row
		var copies map[string]any
		if projection {
			m, ok := asObj(row)
			if !ok {
				rs.fail = uv("row_malformed")
				continue
			}
			copies = pick(m, projectionCopyKeys...)
			if len(copies) != len(projectionCopyKeys) {
				rs.fail = uv("row_malformed")
				continue
			}
			ref = without(m, projectionCopyKeys...)
		}
		o, det := r.resolveRef(ref, kindWorkflow)
		if det != "" {
			rs.fail = uv(det)
			continue
		}
		if !o.parse() {
			rs.fail = uv("object_not_canonical")
			continue
		}
		rs.attributed = true
		rs.objectSHA = o.entry.SHA256
		rs.adm = attribution(o)
		rs.fail = r.evalWorkflowRow(ctx, o, rs.adm, copies, seenIDs)
	}
	return out
}

func (r *run) evalWorkflowRow(ctx context.Context, o *object, a *admission, copies map[string]any, seenIDs map[string]bool) *fail {
	if d := readback(o); d != "" {
		return uv(d)
	}
	s, f := r.verifyPair(ctx, o, pairAdmission)
	if f != nil {
		return f
	}
	if f := checkWorkflow(a); f != nil {
		return f
	}
	for k, v := range copies {
		if !jsonEqual(v, o.doc[k]) {
			return mm("projection_mismatch")
		}
	}
	if f := r.bindTrust(s); f != nil {
		return f
	}
	if seenIDs[a.admissionID] {
		return uv("duplicate_admission")
	}
	seenIDs[a.admissionID] = true
	return r.lifecycle(o, a, s)
}

// sortedTargets is targetNames (already alphabetical); kept as a function so
// output order is explicit.
func sortedTargets() []string {
	t := append([]string{}, targetNames...)
	sort.Strings(t)
	return t
}
