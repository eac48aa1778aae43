// Package ledgergen generates complete OpenAdapt evidence roots (evidence
// registry, signer registry, trust-state receipts, release and workflow
// admission objects with their public-trust DSSE bundles, ledgers and
// projections) signed with a test Ed25519 key. Tests pin the generated
// signer registry with --signer-registry-identity. Hooks mutate signed
// content while generating (every digest that covers the change is then
// recomputed) or after registration (nothing else changes), so the
// mutation suite can aim at exactly one check.
//
// It deliberately does not import package ledger: it is an independent
// implementation of the format, so ledger tests cross-check both.
package ledgergen

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// Constants of OpenAdapt's public-trust format (docs/ledger.md, Trust root).
const (
	EvidenceRepo   = "OpenAdaptAI/.github"
	EvidenceRepoID = "858454062"
	OwnerID        = "132681217"
	OpsRepo        = "OpenAdaptAI/openadapt-ops"
	OpsRepoID      = "1172011294"
	RetainedPolicy = "sha256:e1444a08ce6b16736168cce027ce9d48abb2e0e246fc0cd79c0772fa8e423e11"
	BundleMedia    = "application/vnd.dev.sigstore.bundle.v0.3+json"
	PayloadType    = "application/vnd.openadapt.production-public-trust-signing-statement+json;version=1"
)

// Targets and their contracts (docs/ledger.md, Verdicts).
var Targets = []string{"agent", "capture", "cloud", "desktop", "docs", "flow", "openadapt"}

var contracts = map[string][4]string{
	"agent":     {"production_agent", "package", "OpenAdaptAI/openadapt-agent", "1136136670"},
	"capture":   {"production_capture", "package", "OpenAdaptAI/openadapt-capture", "1115283835"},
	"cloud":     {"production_cloud", "deployment", "OpenAdaptAI/openadapt-cloud", "1300570990"},
	"desktop":   {"production_desktop", "package", "OpenAdaptAI/openadapt-desktop", "1171291730"},
	"docs":      {"production_docs", "deployment", "OpenAdaptAI/openadapt-ops", "1172011294"},
	"flow":      {"production_flow", "package", "OpenAdaptAI/openadapt-flow", "1291376938"},
	"openadapt": {"production_openadapt", "package", "OpenAdaptAI/OpenAdapt", "627024850"},
}

// Canonical returns Python's json.dumps(v, sort_keys=True,
// separators=(",",":"), ensure_ascii=False) for the ASCII-only values this
// generator builds (maps, slices, strings, int64/int, bool, nil).
func Canonical(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("ledgergen: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// CanonicalLF is Canonical(v) + LF.
func CanonicalLF(v any) []byte { return append(Canonical(v), '\n') }

// H is "sha256:" + hex(sha256(b)).
func H(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// D is H(domain ‖ NUL ‖ canonical(v)).
func D(domain string, v any) string {
	return H(append(append([]byte(domain), 0), Canonical(v)...))
}

// Clone deep-copies a JSON-like value.
func Clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Clone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = Clone(e)
		}
		return l
	}
	return v
}

func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TS formats a time as the format's whole-second UTC timestamp.
func TS(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// Fake returns a deterministic digest for a label.
func Fake(label string) string { return H([]byte("ledgergen:" + label)) }

func hex40(label string) string { return Fake(label)[7:47] }

// ReleaseSpec describes one release-ledger row.
type ReleaseSpec struct {
	Target    string
	Seq       int
	Issued    time.Time
	NotBefore time.Time  // zero: Issued
	Expires   *time.Time // nil: until revoked
}

// WorkflowSpec describes one workflow-ledger row.
type WorkflowSpec struct {
	BundleSHA256  string
	BundleVersion string
	Issued        time.Time
	NotBefore     time.Time
	Expires       *time.Time
}

// Envelope is a public-trust DSSE bundle before serialization.
type Envelope struct {
	PayloadType string
	Payload     []byte
	PayloadB64  string // when set, used verbatim instead of base64(Payload)
	Sigs        []Sig
	Hint        string
	Extra       map[string]any // extra top-level keys
	Pretty      bool           // serialize non-canonically (indented)
}

// Sig is one DSSE signature.
type Sig struct {
	KeyID  string
	Sig    []byte
	SigB64 string // when set, used verbatim
}

// Hooks mutate the generation. Every hook is optional.
type Hooks struct {
	// SignerRegistry edits the signer registry before its identity is taken.
	SignerRegistry func(doc map[string]any)
	// Authority / RevocationR1 edit a receipt before its id and signature.
	Authority    func(doc map[string]any)
	RevocationR1 func(doc map[string]any)
	// R2 returns the revocations of a second revocation receipt (revision 2,
	// chained to R1), issued after the admissions; nil means no R2.
	R2 func(r *Root) []any
	// ReleasePre / WorkflowPre edit an admission object before its derived
	// digests and admission id are computed; ...Post after, before signing.
	ReleasePre   func(spec ReleaseSpec, obj map[string]any)
	ReleasePost  func(spec ReleaseSpec, obj map[string]any)
	WorkflowPre  func(i int, obj map[string]any)
	WorkflowPost func(i int, obj map[string]any)
	// ObjectBytes may replace an object's bytes before registration
	// (for example with a non-canonical spelling).
	ObjectBytes func(kind string, index int, raw []byte) []byte
	// Statement edits a signing statement before it is signed.
	Statement func(kind string, index int, st map[string]any)
	// Sign may replace the signed message (default: the DSSE PAE).
	Sign func(kind string, index int, pae, payload []byte) []byte
	// Envelope edits a bundle after signing, before registration.
	Envelope func(kind string, index int, e *Envelope)
	// AfterBuild edits anything after registration; nothing is recomputed
	// unless the hook calls Root helpers.
	AfterBuild func(r *Root)
}

// Options configures Generate.
type Options struct {
	// Now is the generation instant; objects are issued before it.
	Now       time.Time
	Releases  []ReleaseSpec
	Workflows []WorkflowSpec
	// Filler adds this many (summary object, bundle) entry pairs to the
	// registry (their files are not written), for size benchmarks.
	Filler int
	// StaticTargets holds the projection's static target fields, keyed by
	// target; nil means no target projection.
	StaticTargets map[string]map[string]any
	// Seed for the Ed25519 key (32 bytes); nil uses a fixed test seed.
	Seed []byte
	// KMS signs every public-trust bundle with an AWS-KMS-profile P-256
	// signer (aws-kms-p256-dsse-v1) instead of the software Ed25519 one.
	KMS   bool
	Hooks Hooks
}

// Item is one registered object with its bundle.
type Item struct {
	Kind       string
	Index      int // per-kind generation index
	Object     map[string]any
	Raw        []byte
	Entry      map[string]any
	Bundle     []byte
	BundleEntr map[string]any
	Spec       any // ReleaseSpec or WorkflowSpec
}

// Root is a generated evidence root.
type Root struct {
	Key              ed25519.PrivateKey
	KMSKey           *ecdsa.PrivateKey
	KMSKeyID         string
	PublicKeySHA256  string
	OuterKeyID       string
	InnerKeyID       string
	SignerRegistry   []byte
	SignerIdentity   string
	SignerPath       string
	AuthorityID      string
	R1ID             string
	Registry         map[string]any
	Entries          []any // the registry's entries (aliased into Registry)
	Releases         []*Item
	Workflows        []*Item
	Receipts         []*Item
	ReleaseLedger    map[string]any
	WorkflowLedger   map[string]any
	WorkflowProj     map[string]any
	TargetProjection map[string]any
	// Files holds every content-addressed file to write (path → bytes).
	Files map[string][]byte
	opts  Options
	count map[string]int
}

// Generate builds an evidence root in memory.
func Generate(o Options) *Root {
	if o.Now.IsZero() {
		o.Now = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	seed := o.Seed
	if seed == nil {
		s := sha256.Sum256([]byte("openadapt-agent ledgergen test key"))
		seed = s[:]
	}
	r := &Root{Key: ed25519.NewKeyFromSeed(seed), Files: map[string][]byte{}, opts: o, count: map[string]int{}}
	pub := r.Key.Public().(ed25519.PublicKey)
	spki := append([]byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}, pub...)
	rawSum := sha256.Sum256(pub)
	id16 := hex.EncodeToString(rawSum[:])[:16]
	r.OuterKeyID, r.InnerKeyID = "oa-public-trust-ed25519-"+id16, "qa-ed25519-"+id16
	r.PublicKeySHA256 = H(spki)
	gen := o.Now.Add(-90 * 24 * time.Hour)
	sr := map[string]any{
		"schema_version": "openadapt.qualification-signer-registry/v2",
		"revision":       int64(1),
		"generated_at":   TS(gen),
		"expires_at":     nil,
		"signers": []any{
			map[string]any{
				"algorithm":                  "ed25519",
				"allowed_ref_prefixes":       []any{"refs/heads/main"},
				"allowed_usages":             []any{"qualification-authority-state-receipt", "qualification-evidence-decision-receipt", "qualification-revocation-state-receipt"},
				"allowed_workflows":          []any{"https://github.com/OpenAdaptAI/openadapt-ops/.github/workflows/qualification-authority-state.yml@refs/heads/main", "https://github.com/OpenAdaptAI/openadapt-ops/.github/workflows/qualification-revocation-state.yml@refs/heads/main"},
				"key_id":                     r.InnerKeyID,
				"public_key":                 base64.RawURLEncoding.EncodeToString(pub),
				"public_key_sha256":          r.PublicKeySHA256,
				"public_key_spki_der_base64": base64.StdEncoding.EncodeToString(spki),
				"revoked_at":                 nil,
				"statement_schema_versions":  []any{"openadapt.qualification-evidence-signing-statement/v1"},
				"status":                     "active",
			},
			map[string]any{
				"algorithm":                  "ed25519",
				"allowed_environments":       []any{"synthetic-qualification-evidence-decision"},
				"allowed_kinds":              []any{"production-acceptance-summary", "qualification-admission", "qualification-authority-state-receipt", "qualification-release", "qualification-revocation-state-receipt"},
				"allowed_ref_prefixes":       []any{"refs/heads/main"},
				"allowed_usages":             []any{"production-public-evidence"},
				"allowed_workflows":          []any{"https://github.com/OpenAdaptAI/.github/.github/workflows/sign-production-evidence-software.yml@refs/heads/main"},
				"key_id":                     r.OuterKeyID,
				"key_origin":                 "software",
				"public_key":                 base64.RawURLEncoding.EncodeToString(pub),
				"public_key_sha256":          r.PublicKeySHA256,
				"public_key_spki_der_base64": base64.StdEncoding.EncodeToString(spki),
				"revoked_at":                 nil,
				"signature_encoding":         "raw-64-base64-rfc4648-padded",
				"statement_schema_versions":  []any{"openadapt.production-public-trust-signing-statement/v1"},
				"status":                     "active",
			},
		},
	}
	if o.KMS {
		d, _ := hex.DecodeString("2f29c1f30c9db50a15e08ddd4f5f49d1f5c621d40ad72835d11065448148d8c7")
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), d)
		if err != nil {
			panic("ledgergen: fixed P-256 test key: " + err.Error())
		}
		r.KMSKey = k
		der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
		point, _ := k.PublicKey.Bytes()
		r.KMSKeyID = "oa-public-trust-p256-" + H(der)[7:23]
		sr["signers"] = append(sr["signers"].([]any), map[string]any{
			"algorithm":                  "ecdsa-p256-sha256",
			"allowed_environments":       []any{"public-trust-signing"},
			"allowed_kinds":              []any{"production-acceptance-summary", "qualification-admission", "qualification-authority-state-receipt", "qualification-release", "qualification-revocation-state-receipt"},
			"allowed_ref_prefixes":       []any{"refs/heads/main"},
			"allowed_usages":             []any{"production-public-evidence"},
			"allowed_workflows":          []any{"https://github.com/OpenAdaptAI/.github/.github/workflows/sign-production-evidence.yml@refs/heads/main"},
			"key_id":                     r.KMSKeyID,
			"key_origin":                 "aws-kms",
			"kms_key_arn":                KMSArn,
			"public_key":                 base64.RawURLEncoding.EncodeToString(point),
			"public_key_sha256":          H(der),
			"public_key_spki_der_base64": base64.StdEncoding.EncodeToString(der),
			"revoked_at":                 nil,
			"signature_encoding":         "asn1-der-low-s-base64-rfc4648-padded",
			"statement_schema_versions":  []any{"openadapt.production-public-trust-signing-statement/v1"},
			"status":                     "active",
		})
	}
	if o.Hooks.SignerRegistry != nil {
		o.Hooks.SignerRegistry(sr)
	}
	r.SignerRegistry = CanonicalLF(sr)
	r.SignerIdentity = D("OpenAdapt qualification signer registry v2", sr)
	fileSHA := H(r.SignerRegistry)
	r.SignerPath = "production-evidence/signer-registries/sha256/" + fileSHA[7:9] + "/" + fileSHA[7:] + ".qualification-signer-registry.json"
	r.Files[r.SignerPath] = r.SignerRegistry
	pointer := map[string]any{
		"schema_version":           "openadapt.qualification-signer-registry-pointer/v1",
		"object_path":              r.SignerPath,
		"object_sha256":            fileSHA,
		"registry_identity_sha256": r.SignerIdentity,
		"registry_revision":        int64(1),
	}

	// Trust state: A and R1, issued with the signer registry.
	a := r.receipt("qualification-authority-state-receipt", gen, o.Hooks.Authority, map[string]any{
		"status":                          "active",
		"signer_registry_sha256":          fileSHA,
		"signer_registry_identity_sha256": r.SignerIdentity,
		"signer_registry_revision":        int64(1),
		"evidence_authority_sha256":       Fake("evidence-authority"),
	})
	r.AuthorityID = a.Object["authority_state_sha256"].(string)
	r1 := r.receipt("qualification-revocation-state-receipt", gen, o.Hooks.RevocationR1, map[string]any{
		"status":                           "current",
		"previous_revocation_state_sha256": nil,
		"revision":                         int64(1),
		"authority_state_sha256":           r.AuthorityID,
		"signer_registry_sha256":           r.SignerIdentity,
		"revocations":                      []any{},
	})
	r.R1ID = r1.Object["revocation_state_sha256"].(string)
	r.Receipts = []*Item{a, r1}

	// Admissions.
	releases := o.Releases
	if releases == nil {
		for _, t := range Targets {
			releases = append(releases, ReleaseSpec{Target: t, Seq: 1, Issued: o.Now.Add(-30 * 24 * time.Hour)})
		}
	}
	prevID := map[string]string{}
	for _, spec := range releases {
		obj := r.releaseObject(spec, prevID[spec.Target])
		prevID[spec.Target] = obj["admission_id_sha256"].(string)
		it := r.register("qualification-release", obj, spec)
		r.Releases = append(r.Releases, it)
	}
	for i, spec := range o.Workflows {
		obj := r.workflowObject(i, spec)
		it := r.register("qualification-admission", obj, spec)
		r.Workflows = append(r.Workflows, it)
	}
	var r2 *Item
	if o.Hooks.R2 != nil {
		r2 = r.receipt("qualification-revocation-state-receipt", o.Now.Add(-time.Hour), nil, map[string]any{
			"status":                           "current",
			"previous_revocation_state_sha256": r.R1ID,
			"revision":                         int64(2),
			"authority_state_sha256":           r.AuthorityID,
			"signer_registry_sha256":           r.SignerIdentity,
			"revocations":                      o.Hooks.R2(r),
		})
		r.Receipts = append(r.Receipts, r2)
	}

	// Registry: receipts, filler, admissions, then R2.
	var entries []any
	add := func(it *Item) { entries = append(entries, it.Entry, it.BundleEntr) }
	add(a)
	add(r1)
	for i := 0; i < o.Filler; i++ {
		obj := map[string]any{"schema_version": "openadapt.production-lifecycle-evidence-summary/v3", "filler": int64(i)}
		raw := CanonicalLF(obj)
		e := entryFor("production-acceptance-summary", "openadapt.production-lifecycle-evidence-summary/v3",
			"application/vnd.openadapt.production-lifecycle-evidence-summary+json;version=3", raw,
			D("OpenAdapt production evidence semantic identity v1", map[string]any{"kind": "production-acceptance-summary", "object_schema_version": "openadapt.production-lifecycle-evidence-summary/v3", "object": obj}), nil)
		braw := []byte(fmt.Sprintf(`{"filler":%d}`+"\n", i))
		be := bundleEntryFor("production-acceptance-summary", braw, e["object_sha256"].(string))
		entries = append(entries, e, be)
	}
	for _, it := range r.Releases {
		add(it)
	}
	for _, it := range r.Workflows {
		add(it)
	}
	if r2 != nil {
		add(r2)
	}
	r.Entries = entries
	r.Registry = map[string]any{
		"$schema":                       "schemas/evidence-registry.schema.json",
		"schema_version":                "openadapt.production-evidence-registry/v2",
		"repository":                    EvidenceRepo,
		"repository_id":                 EvidenceRepoID,
		"repository_owner_id":           OwnerID,
		"revision":                      int64(1),
		"previous_registry_head_sha256": nil,
		"signer_registry":               pointer,
		"signer_registry_history":       []any{Clone(pointer)},
		"entries":                       entries,
	}
	r.RecomputeHead()

	// Ledgers.
	var relRows, wfRows, projRows []any
	for _, it := range r.Releases {
		relRows = append(relRows, r.Reference(it.Entry))
	}
	for _, it := range r.Workflows {
		ref := r.Reference(it.Entry)
		wfRows = append(wfRows, ref)
		p := Clone(ref).(map[string]any)
		for _, k := range []string{"bundle_version", "evidence_class", "expires_at", "verdict"} {
			p[k] = it.Object[k]
		}
		projRows = append(projRows, p)
	}
	if relRows == nil {
		relRows = []any{}
	}
	if wfRows == nil {
		wfRows, projRows = []any{}, []any{}
	}
	r.ReleaseLedger = map[string]any{
		"$schema":        "schemas/production-lifecycle-admissions.schema.json",
		"schema_version": "openadapt.production-lifecycle-admissions/v1",
		"policy_sha256":  RetainedPolicy,
		"admissions":     relRows,
	}
	r.WorkflowLedger = map[string]any{
		"$schema":        "schemas/production-workflow-admissions.schema.json",
		"schema_version": "openadapt.production-workflow-admissions/v1",
		"policy_sha256":  RetainedPolicy,
		"admissions":     wfRows,
	}
	commit := hex40("source-commit")
	r.WorkflowProj = map[string]any{
		"admissions":     projRows,
		"policy_sha256":  RetainedPolicy,
		"schema_version": "openadapt.public-production-workflow-admissions/v1",
		"source": map[string]any{
			"schema_version": "openadapt.production-workflow-admissions-source/v1",
			"repository":     EvidenceRepo,
			"source_commit":  commit,
			"files": map[string]any{"admissions": map[string]any{
				"path":   "production-workflow-admissions.json",
				"sha256": "",
				"url":    "https://raw.githubusercontent.com/OpenAdaptAI/.github/" + commit + "/production-workflow-admissions.json",
			}},
		},
	}
	if o.StaticTargets != nil {
		var targets []any
		for _, t := range Targets {
			tm := map[string]any{}
			for k, v := range o.StaticTargets[t] {
				tm[k] = Clone(v)
			}
			hist := []any{}
			for _, it := range r.Releases {
				if it.Object["target"] == t {
					hist = append(hist, Clone(it.Object))
				}
			}
			tm["admission_history"] = hist
			tm["latest_admission"] = nil
			if len(hist) > 0 {
				tm["latest_admission"] = Clone(hist[len(hist)-1])
			}
			targets = append(targets, tm)
		}
		r.TargetProjection = map[string]any{
			"$schema":                "schemas/production-lifecycle-public.schema.json",
			"schema_version":         "openadapt.public-production-lifecycle/v1",
			"policy_revision":        int64(6),
			"maximum_admission_days": int64(30),
			"derivation": map[string]any{"mode": "latest_signed_admission_at_read_time", "static_production_state": false,
				"expired_or_revoked_latest_behavior": "no_production", "fallback_to_older_release": false},
			"source": map[string]any{
				"schema_version": "openadapt.production-lifecycle-source/v1",
				"repository":     EvidenceRepo,
				"source_commit":  commit,
				"files": map[string]any{
					"evidence_registry": map[string]any{"path": "evidence-registry.json", "sha256": "",
						"url": "https://raw.githubusercontent.com/OpenAdaptAI/.github/" + commit + "/evidence-registry.json"},
					"admissions": map[string]any{"path": "production-lifecycle-admissions.json", "sha256": "",
						"url": "https://raw.githubusercontent.com/OpenAdaptAI/.github/" + commit + "/production-lifecycle-admissions.json"},
				},
			},
			"targets": targets,
		}
	}
	if o.Hooks.AfterBuild != nil {
		o.Hooks.AfterBuild(r)
	}
	return r
}

func entryFor(kind, schema, media string, raw []byte, semantic string, subject any) map[string]any {
	sha := H(raw)
	e := map[string]any{
		"kind":                     kind,
		"object_schema_version":    schema,
		"object_media_type":        media,
		"object_path":              ObjectPath(sha, kind),
		"object_sha256":            sha,
		"size_bytes":               int64(len(raw)),
		"semantic_identity_sha256": semantic,
		"subject_sha256":           subject,
	}
	e["registry_entry_sha256"] = EntryDigest(e)
	return e
}

func bundleEntryFor(kind string, braw []byte, subject string) map[string]any {
	bk := kind + "-sigstore-bundle"
	bsha := H(braw)
	sem := D("OpenAdapt production evidence Sigstore bundle identity v1", map[string]any{"kind": bk, "object_sha256": bsha, "subject_sha256": subject})
	return entryFor(bk, BundleMedia, BundleMedia, braw, sem, subject)
}

// EntryDigest recomputes registry_entry_sha256 over the 8 entry fields.
func EntryDigest(e map[string]any) string {
	f := map[string]any{}
	for _, k := range []string{"kind", "object_schema_version", "object_media_type", "object_path", "object_sha256", "size_bytes", "semantic_identity_sha256", "subject_sha256"} {
		f[k] = e[k]
	}
	return D("OpenAdapt production evidence registry entry v1", f)
}

// ObjectPath is the content-addressed path of an object.
func ObjectPath(sha, kind string) string {
	return "production-evidence/objects/sha256/" + sha[7:9] + "/" + sha[7:] + "." + kind + ".json"
}

// RecomputeHead recomputes registry_head_sha256 from the current fields.
func (r *Root) RecomputeHead() {
	reg := r.Registry
	var ds []any
	entries, _ := reg["entries"].([]any)
	for _, e := range entries {
		ds = append(ds, e.(map[string]any)["registry_entry_sha256"])
	}
	if ds == nil {
		ds = []any{}
	}
	head := map[string]any{
		"schema_version":                reg["schema_version"],
		"repository":                    reg["repository"],
		"repository_id":                 reg["repository_id"],
		"repository_owner_id":           reg["repository_owner_id"],
		"revision":                      reg["revision"],
		"previous_registry_head_sha256": reg["previous_registry_head_sha256"],
		"signer_registry":               reg["signer_registry"],
		"signer_registry_history":       reg["signer_registry_history"],
		"entry_sha256s":                 ds,
	}
	reg["registry_head_sha256"] = D("OpenAdapt production evidence registry head v2", head)
}

// Reference builds a ledger-row object reference to a registry entry, bound
// to the registry's current revision and head.
func (r *Root) Reference(e map[string]any) map[string]any {
	ref := Clone(e).(map[string]any)
	ref["schema_version"] = "openadapt.production-evidence-object-reference/v2"
	ref["repository"] = EvidenceRepo
	ref["repository_id"] = EvidenceRepoID
	ref["repository_owner_id"] = OwnerID
	ref["registry_source_commit"] = hex40("registry-commit")
	ref["registry_revision"] = r.Registry["revision"]
	ref["registry_head_sha256"] = r.Registry["registry_head_sha256"]
	return ref
}

func (r *Root) issuer(workflow, env string) map[string]any {
	return map[string]any{
		"repository": EvidenceRepo, "repository_id": EvidenceRepoID, "repository_owner_id": OwnerID,
		"workflow": workflow, "ref": "refs/heads/main", "source_commit": hex40("issuer-commit"), "environment": env,
	}
}

func fakeRef(kind, schema, media string, label string, subject any) map[string]any {
	sha := Fake(label)
	e := map[string]any{
		"kind": kind, "object_schema_version": schema, "object_media_type": media,
		"object_path": ObjectPath(sha, kind), "object_sha256": sha, "size_bytes": int64(1000),
		"semantic_identity_sha256": Fake(label + ":semantic"), "subject_sha256": subject,
	}
	e["registry_entry_sha256"] = EntryDigest(e)
	e["schema_version"] = "openadapt.production-evidence-object-reference/v2"
	e["repository"], e["repository_id"], e["repository_owner_id"] = EvidenceRepo, EvidenceRepoID, OwnerID
	e["registry_source_commit"] = hex40("old-commit")
	e["registry_revision"] = int64(1)
	e["registry_head_sha256"] = Fake("old-head")
	return e
}

func refPair(kind, schema, media, label string) (map[string]any, map[string]any) {
	o := fakeRef(kind, schema, media, label, nil)
	b := fakeRef(kind+"-sigstore-bundle", BundleMedia, BundleMedia, label+":bundle", o["object_sha256"])
	return o, b
}

func (r *Root) releaseObject(spec ReleaseSpec, prev string) map[string]any {
	c := contracts[spec.Target]
	nb := spec.NotBefore
	if nb.IsZero() {
		nb = spec.Issued
	}
	var exp any
	if spec.Expires != nil {
		exp = TS(*spec.Expires)
	}
	var prevAny any
	if prev != "" {
		prevAny = prev
	}
	rel := map[string]any{
		"schema_version":       "openadapt.production-release-candidate/v1",
		"kind":                 c[1],
		"source_repository":    c[2],
		"source_repository_id": c[3],
		"source_commit":        hex40("release-" + spec.Target + strconv.Itoa(spec.Seq)),
		"artifacts": []any{map[string]any{"kind": "python-wheel", "name": spec.Target + ".whl",
			"sha256": Fake("artifact-" + spec.Target + strconv.Itoa(spec.Seq)), "size_bytes": int64(1234)}},
	}
	if c[1] == "deployment" {
		rel["version"], rel["tag"] = nil, nil
		rel["deployment_id"] = strconv.Itoa(1000 + spec.Seq)
		rel["deployment_sha256"] = Fake("deploy-" + spec.Target + strconv.Itoa(spec.Seq))
	} else {
		v := fmt.Sprintf("1.%d.0", spec.Seq)
		rel["version"], rel["tag"] = v, "v"+v
		rel["deployment_id"], rel["deployment_sha256"] = nil, nil
	}
	summary, summaryBundle := refPair("production-acceptance-summary", "openadapt.production-lifecycle-evidence-summary/v3",
		"application/vnd.openadapt.production-lifecycle-evidence-summary+json;version=3", "summary-"+spec.Target+strconv.Itoa(spec.Seq))
	obj := map[string]any{
		"schema_version":   "openadapt.qualification-release/v2",
		"evidence_class":   "remote-safe-synthetic",
		"target":           spec.Target,
		"verdict":          "accepted",
		"claim_scope":      c[0],
		"release_identity": map[string]any{"schema_version": "openadapt.monotonic-production-release/v1", "channel": "production", "sequence": int64(spec.Seq), "previous_admission_sha256": prevAny},
		"release":          rel,
		"publication_staging": map[string]any{
			"schema_version": "openadapt.production-release-staging-evidence/v1",
			"tag_ref_state":  map[string]any{"exists": true, "ref": "refs/tags/x"},
		},
		"production_acceptance_summary_reference":        summary,
		"production_acceptance_summary_bundle_reference": summaryBundle,
		"authority_state_sha256":                         r.AuthorityID,
		"revocation_state_sha256":                        r.R1ID,
		"signer_registry_sha256":                         r.SignerIdentity,
		"publication_policy_sha256":                      Fake("publication-policy"),
		"issued_at":                                      TS(spec.Issued),
		"not_before":                                     TS(nb),
		"expires_at":                                     exp,
		"issuer":                                         r.issuer(".github/workflows/issue-production-release-admission.yml", "production-release-admission"),
	}
	if r.opts.Hooks.ReleasePre != nil {
		r.opts.Hooks.ReleasePre(spec, obj)
	}
	rel = obj["release"].(map[string]any)
	obj["release_sha256"] = D("OpenAdapt production release candidate v1", map[string]any{"target": obj["target"], "claim_scope": obj["claim_scope"], "release": rel})
	obj["artifact_inventory_sha256"] = D("OpenAdapt production release artifact inventory v1", map[string]any{"target": obj["target"], "claim_scope": obj["claim_scope"], "artifacts": rel["artifacts"]})
	st := obj["publication_staging"].(map[string]any)
	st["tag_ref_state_sha256"] = D("OpenAdapt production release tag ref state v1", st["tag_ref_state"])
	obj["publication_staging_sha256"] = D("OpenAdapt production release staging evidence v1", st)
	obj["admission_id_sha256"] = D("OpenAdapt qualification release admission v2", without(obj, "admission_id_sha256"))
	if r.opts.Hooks.ReleasePost != nil {
		r.opts.Hooks.ReleasePost(spec, obj)
	}
	return obj
}

func (r *Root) workflowObject(i int, spec WorkflowSpec) map[string]any {
	nb := spec.NotBefore
	if nb.IsZero() {
		nb = spec.Issued
	}
	var exp any
	if spec.Expires != nil {
		exp = TS(*spec.Expires)
	}
	dr, drb := refPair("qualification-evidence-decision-receipt", "openadapt.qualification-evidence-decision-receipt/v2",
		"application/vnd.openadapt.qualification-evidence-decision-receipt+json;version=2", "decision-"+strconv.Itoa(i))
	obj := map[string]any{
		"schema_version":   "openadapt.qualification-admission/v4",
		"evidence_class":   "remote-safe-synthetic",
		"bundle_version":   spec.BundleVersion,
		"bundle_sha256":    spec.BundleSHA256,
		"entity_class":     "record",
		"campaign_summary": map[string]any{"healthy": map[string]any{"observed_trial_count": int64(3)}},
		"local_identity_opening": map[string]any{
			"schema_version": "openadapt.qualification-local-identity-opening/v1", "algorithm": "hmac-sha256",
			"required": true, "customer_controlled_secret_required": true, "exact_contract_match_required": true,
			"revalidation_before_actuation": true, "maximum_age_seconds": int64(60),
		},
		"decision_receipt_reference":        dr,
		"decision_receipt_bundle_reference": drb,
		"signer_registry_sha256":            r.SignerIdentity,
		"revocation_state_sha256":           r.R1ID,
		"verdict":                           "accepted",
		"issued_at":                         TS(spec.Issued),
		"not_before":                        TS(nb),
		"expires_at":                        exp,
		"issuer":                            r.issuer(".github/workflows/issue-qualification-admission.yml", "qualification-admission"),
	}
	for _, k := range []string{"organization_id_sha256", "workflow_id_sha256", "workflow_version_id_sha256", "admitted_runtime_sha256",
		"application_contract_sha256", "environment_contract_sha256", "input_contract_sha256", "action_contract_sha256",
		"identity_contract_sha256", "effect_contract_sha256", "policy_contract_sha256", "evidence_authority_sha256",
		"campaign_artifact_sha256", "campaign_permit_sha256"} {
		obj[k] = Fake(k + strconv.Itoa(i))
	}
	if r.opts.Hooks.WorkflowPre != nil {
		r.opts.Hooks.WorkflowPre(i, obj)
	}
	obj["admission_id_sha256"] = D("OpenAdapt qualification admission v4", without(obj, "admission_id_sha256"))
	if r.opts.Hooks.WorkflowPost != nil {
		r.opts.Hooks.WorkflowPost(i, obj)
	}
	return obj
}

var kindContract = map[string][2]string{
	"qualification-release":                  {"openadapt.qualification-release/v2", "application/vnd.openadapt.qualification-release+json;version=2"},
	"qualification-admission":                {"openadapt.qualification-admission/v4", "application/vnd.openadapt.qualification-admission+json;version=4"},
	"qualification-authority-state-receipt":  {"openadapt.qualification-authority-state-receipt/v2", "application/vnd.openadapt.qualification-authority-state-receipt+json;version=2"},
	"qualification-revocation-state-receipt": {"openadapt.qualification-revocation-state-receipt/v1", "application/vnd.openadapt.qualification-revocation-state-receipt+json;version=1"},
}

// register serializes, signs and builds the registry entries of an object.
func (r *Root) register(kind string, obj map[string]any, spec any) *Item {
	idx := r.count[kind]
	r.count[kind]++
	raw := CanonicalLF(obj)
	if r.opts.Hooks.ObjectBytes != nil {
		raw = r.opts.Hooks.ObjectBytes(kind, idx, raw)
	}
	c := kindContract[kind]
	var sem string
	switch kind {
	case "qualification-authority-state-receipt":
		sem, _ = obj["authority_state_sha256"].(string)
	case "qualification-revocation-state-receipt":
		sem, _ = obj["revocation_state_sha256"].(string)
	default:
		sem = D("OpenAdapt production evidence semantic identity v1", map[string]any{"kind": kind, "object_schema_version": c[0], "object": obj})
	}
	e := entryFor(kind, c[0], c[1], raw, sem, nil)
	r.Files[e["object_path"].(string)] = raw

	iss := obj["issuer"]
	authority := r.AuthorityID
	revState, _ := obj["revocation_state_sha256"].(string)
	if kind == "qualification-authority-state-receipt" {
		revState = r.R1ID
		if revState == "" {
			revState = Fake("no-revocation-state-yet")
		}
	}
	if authority == "" {
		authority = obj["authority_state_sha256"].(string)
	}
	issued := TS(r.opts.Now.Add(-60 * 24 * time.Hour))
	if s, ok := obj["issued_at"].(string); ok {
		issued = s
	} else if s, ok := obj["observed_at"].(string); ok {
		issued = s
	}
	notBefore := issued
	if s, ok := obj["not_before"].(string); ok {
		notBefore = s
	}
	stmt := map[string]any{
		"schema_version":           "openadapt.production-public-trust-signing-statement/v1",
		"object_kind":              kind,
		"object_schema_version":    c[0],
		"object_media_type":        c[1],
		"object_sha256":            H(raw),
		"object_size_bytes":        int64(len(raw)),
		"semantic_identity_sha256": sem,
		"source_issuer":            Clone(iss),
		"signer_registry_sha256":   r.SignerIdentity,
		"authority_state_sha256":   authority,
		"revocation_state_sha256":  revState,
		"issued_at":                issued,
		"not_before":               notBefore,
		"expires_at":               obj["expires_at"],
		"request_id_sha256":        Fake("request-" + kind + strconv.Itoa(idx)),
		"signing_authority": map[string]any{
			"repository": EvidenceRepo, "repository_id": EvidenceRepoID, "repository_owner_id": OwnerID,
			"workflow": ".github/workflows/sign-production-evidence-software.yml", "ref": "refs/heads/main",
			"source_commit": hex40("signing-commit"), "environment": "synthetic-qualification-evidence-decision",
			"key_origin": "software",
		},
		"key_id":            r.OuterKeyID,
		"signature_profile": "software-ed25519-dsse-v1",
	}
	keyID := r.OuterKeyID
	if r.KMSKey != nil {
		keyID = r.KMSKeyID
		stmt["key_id"] = keyID
		stmt["signature_profile"] = "aws-kms-p256-dsse-v1"
		stmt["signing_authority"] = map[string]any{
			"repository": EvidenceRepo, "repository_id": EvidenceRepoID, "repository_owner_id": OwnerID,
			"workflow": ".github/workflows/sign-production-evidence.yml", "ref": "refs/heads/main",
			"source_commit": hex40("signing-commit"), "environment": "public-trust-signing",
			"aws_account_id": "992382684924", "aws_region": "us-east-1", "kms_key_arn": KMSArn,
			"kms_key_spec": "ECC_NIST_P256", "kms_signing_algorithm": "ECDSA_SHA_256", "kms_message_type": "DIGEST",
			"role_arn": "arn:aws:iam::992382684924:role/openadapt-public-trust-signer",
		}
	}
	if r.opts.Hooks.Statement != nil {
		r.opts.Hooks.Statement(kind, idx, stmt)
	}
	payload := CanonicalLF(stmt)
	pae := PAE(PayloadType, payload)
	msg := pae
	if r.opts.Hooks.Sign != nil {
		msg = r.opts.Hooks.Sign(kind, idx, pae, payload)
	}
	var sig []byte
	if r.KMSKey != nil {
		sig = SignLowS(r.KMSKey, msg)
	} else {
		sig = ed25519.Sign(r.Key, msg)
	}
	env := &Envelope{PayloadType: PayloadType, Payload: payload, Hint: keyID,
		Sigs: []Sig{{KeyID: keyID, Sig: sig}}}
	if r.opts.Hooks.Envelope != nil {
		r.opts.Hooks.Envelope(kind, idx, env)
	}
	braw := env.Bytes()
	be := bundleEntryFor(kind, braw, e["object_sha256"].(string))
	r.Files[be["object_path"].(string)] = braw
	return &Item{Kind: kind, Index: idx, Object: obj, Raw: raw, Entry: e, Bundle: braw, BundleEntr: be, Spec: spec}
}

// KMSArn is the test AWS KMS key ARN of the KMS signer.
const KMSArn = "arn:aws:kms:us-east-1:992382684924:key/12345678-1234-1234-1234-123456789abc"

// SignLowS signs sha256(msg) as a KMS DIGEST message: ASN.1 DER, s ≤ n/2.
func SignLowS(k *ecdsa.PrivateKey, msg []byte) []byte {
	h := sha256.Sum256(msg)
	rr, ss, err := ecdsa.Sign(rand.Reader, k, h[:])
	if err != nil {
		panic("ledgergen: " + err.Error())
	}
	n := k.Curve.Params().N
	if ss.Cmp(new(big.Int).Rsh(n, 1)) > 0 {
		ss = new(big.Int).Sub(n, ss)
	}
	der, _ := asn1.Marshal(struct{ R, S *big.Int }{rr, ss})
	return der
}

// PAE is the DSSE pre-authentication encoding.
func PAE(payloadType string, payload []byte) []byte {
	return []byte(fmt.Sprintf("DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(payload), payload))
}

// Bytes serializes the bundle (canonical + LF unless Pretty).
func (e *Envelope) Bytes() []byte {
	p := e.PayloadB64
	if p == "" {
		p = base64.StdEncoding.EncodeToString(e.Payload)
	}
	var sigs []any
	for _, s := range e.Sigs {
		sb := s.SigB64
		if sb == "" {
			sb = base64.StdEncoding.EncodeToString(s.Sig)
		}
		sigs = append(sigs, map[string]any{"keyid": s.KeyID, "sig": sb})
	}
	doc := map[string]any{
		"dsseEnvelope":         map[string]any{"payload": p, "payloadType": e.PayloadType, "signatures": sigs},
		"mediaType":            BundleMedia,
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": e.Hint}},
	}
	for k, v := range e.Extra {
		doc[k] = v
	}
	if e.Pretty {
		b, _ := json.MarshalIndent(doc, "", "  ")
		return append(b, '\n')
	}
	return CanonicalLF(doc)
}

// receipt builds, signs (inner Ed25519 over the signing statement) and
// registers a trust-state receipt.
func (r *Root) receipt(kind string, at time.Time, hook func(map[string]any), fields map[string]any) *Item {
	isA := kind == "qualification-authority-state-receipt"
	wf, env, dom, idKey, idDom := ".github/workflows/qualification-revocation-state.yml", "qualification-revocation-state",
		"OpenAdapt qualification revocation state receipt v1", "revocation_state_sha256", "OpenAdapt qualification revocation state identity v1"
	if isA {
		wf, env, dom, idKey, idDom = ".github/workflows/qualification-authority-state.yml", "qualification-authority-state",
			"OpenAdapt qualification authority state receipt v2", "authority_state_sha256", "OpenAdapt qualification authority state identity v2"
	}
	c := kindContract[kind]
	doc := map[string]any{
		"schema_version": c[0],
		"observed_at":    TS(at),
		"not_before":     TS(at),
		"expires_at":     nil,
		"issuer_key_id":  r.InnerKeyID,
		"algorithm":      "ed25519",
		"issuer": map[string]any{"repository": OpsRepo, "repository_id": OpsRepoID, "repository_owner_id": OwnerID,
			"workflow": wf, "ref": "refs/heads/main", "source_commit": hex40("ops-commit"), "environment": env},
	}
	for k, v := range fields {
		doc[k] = v
	}
	if hook != nil {
		hook(doc)
	}
	doc[idKey] = D(idDom, without(doc, idKey, "signature", "signing_statement"))
	unsigned := CanonicalLF(without(doc, "signature", "signing_statement"))
	ss := map[string]any{
		"schema_version":         "openadapt.qualification-evidence-signing-statement/v1",
		"object_schema_version":  c[0],
		"signature_domain":       dom + "\x00",
		"unsigned_object_sha256": H(unsigned),
		"unsigned_size_bytes":    int64(len(unsigned)),
		"commitment_scheme":      "sha256-canonical-json-lf",
	}
	doc["signing_statement"] = ss
	doc["signature"] = base64.StdEncoding.EncodeToString(ed25519.Sign(r.Key, CanonicalLF(ss)))
	return r.register(kind, doc, nil)
}

// Write writes the evidence root to dir: registry, signer registry, objects,
// bundles, ledgers and projections (pretty-printed, like OpenAdapt's).
func (r *Root) Write(dir string) error {
	paths := make([]string, 0, len(r.Files))
	for p := range r.Files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := writeFile(filepath.Join(dir, p), r.Files[p]); err != nil {
			return err
		}
	}
	regBytes := pretty(r.Registry)
	if r.Registry != nil {
		if err := writeFile(filepath.Join(dir, "evidence-registry.json"), regBytes); err != nil {
			return err
		}
	}
	relBytes := pretty(r.ReleaseLedger)
	wfBytes := pretty(r.WorkflowLedger)
	if r.ReleaseLedger != nil {
		if err := writeFile(filepath.Join(dir, "production-lifecycle-admissions.json"), relBytes); err != nil {
			return err
		}
	}
	if r.WorkflowLedger != nil {
		if err := writeFile(filepath.Join(dir, "production-workflow-admissions.json"), wfBytes); err != nil {
			return err
		}
	}
	if r.WorkflowProj != nil {
		adm := r.WorkflowProj["source"].(map[string]any)["files"].(map[string]any)["admissions"].(map[string]any)
		if adm["sha256"] == "" {
			adm["sha256"] = H(wfBytes)
		}
		if err := writeFile(filepath.Join(dir, "public", "production-workflow-admissions.json"), pretty(r.WorkflowProj)); err != nil {
			return err
		}
	}
	if r.TargetProjection != nil {
		files := r.TargetProjection["source"].(map[string]any)["files"].(map[string]any)
		if reg, ok := files["evidence_registry"].(map[string]any); ok && reg["sha256"] == "" {
			reg["sha256"] = H(regBytes)
		}
		if adm, ok := files["admissions"].(map[string]any); ok && adm["sha256"] == "" {
			adm["sha256"] = H(relBytes)
		}
		if err := writeFile(filepath.Join(dir, "public", "production-lifecycle.json"), pretty(r.TargetProjection)); err != nil {
			return err
		}
	}
	return nil
}

func pretty(v map[string]any) []byte {
	if v == nil {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return buf.Bytes()
}

func writeFile(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// WriteJSON writes v pretty-printed to path (for ledgers and registries
// that a test builds by hand).
func WriteJSON(path string, v map[string]any) error { return writeFile(path, pretty(v)) }

// TestKey returns the default test signing key (the one Generate uses when
// Options.Seed is nil).
func TestKey() ed25519.PrivateKey {
	s := sha256.Sum256([]byte("openadapt-agent ledgergen test key"))
	return ed25519.NewKeyFromSeed(s[:])
}

// Rereference rebuilds the ledger and projection rows from the items'
// current registry entries and the registry's current revision and head.
func (r *Root) Rereference() {
	var rel, wf, proj []any
	for _, it := range r.Releases {
		rel = append(rel, r.Reference(it.Entry))
	}
	for _, it := range r.Workflows {
		ref := r.Reference(it.Entry)
		wf = append(wf, ref)
		p := Clone(ref).(map[string]any)
		for _, k := range []string{"bundle_version", "evidence_class", "expires_at", "verdict"} {
			p[k] = it.Object[k]
		}
		proj = append(proj, p)
	}
	if rel != nil {
		r.ReleaseLedger["admissions"] = rel
	}
	if wf != nil {
		r.WorkflowLedger["admissions"] = wf
		r.WorkflowProj["admissions"] = proj
	}
}

// FlipByte flips one byte of a file in the middle of it.
func (r *Root) FlipByte(path string) {
	b := append([]byte{}, r.Files[path]...)
	b[len(b)/2] ^= 0x01
	r.Files[path] = b
}

// Path returns the object path of an entry.
func Path(e map[string]any) string { return e["object_path"].(string) }
