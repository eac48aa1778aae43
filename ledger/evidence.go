package ledger

import (
	"bytes"
	"io/fs"
)

// object is a content-addressed file read back from the evidence root.
type object struct {
	entry *entry
	raw   []byte
	doc   map[string]any // nil until parsed
	// canonical: raw is known to be canonical(doc) + LF.
	canonical bool
}

// load reads the file of entry e and checks its sha256 and length (the
// last two row checks of docs/ledger.md, Rows). Detail "" means success.
func (r *run) load(e *entry) (*object, string) {
	if o, ok := r.objCache[e.Path]; ok {
		return o.obj, o.detail
	}
	o, d := r.loadUncached(e)
	r.objCache[e.Path] = cachedObject{o, d}
	return o, d
}

type cachedObject struct {
	obj    *object
	detail string
}

func (r *run) loadUncached(e *entry) (*object, string) {
	raw, err := fs.ReadFile(r.root, e.Path)
	if err != nil {
		return nil, "object_missing"
	}
	if int64(len(raw)) != e.Size || sha256Digest(raw) != e.SHA256 {
		return nil, "object_digest_mismatch"
	}
	return &object{entry: e, raw: raw}, ""
}

// parse parses an object's bytes into a JSON object (no canonical check).
func (o *object) parse() bool {
	if o.doc != nil {
		return true
	}
	v, err := parseJSON(o.raw)
	if err != nil {
		return false
	}
	m, ok := asObj(v)
	if !ok {
		return false
	}
	o.doc = m
	return true
}

// readback finishes the readback of a regular object already loaded: schema
// version, canonical + LF, semantic identity.
func readback(o *object) string {
	if !o.parse() {
		return "object_not_canonical"
	}
	if s, _ := getStr(o.doc, "schema_version"); s != o.entry.Schema {
		return "object_invalid"
	}
	// The parser already refused invalid UTF-8 and duplicate keys, so the
	// canonical check is a comparison with the re-encoded tree. Inline
	// objects were built as canonical(object) + LF and need no re-check.
	if !o.canonical {
		if !isCanonicalLF(o.doc, o.raw) {
			return "object_not_canonical"
		}
		o.canonical = true
	}
	id, ok := semanticIdentityOf(o)
	if !ok || id != o.entry.SemanticID {
		return "semantic_identity_mismatch"
	}
	return ""
}

// semanticIdentityOf is semanticIdentity for a canonical object: the
// regular-kind identity is D(domain, {kind, object, object_schema_version})
// and, keys being sorted, its canonical form embeds the object's canonical
// bytes verbatim, so they are reused instead of re-encoded.
func semanticIdentityOf(o *object) (string, bool) {
	switch o.entry.Kind {
	case kindAuthority, kindRevocation, kindDecision:
		return semanticIdentity(o.entry, o.doc)
	}
	var buf bytes.Buffer
	buf.Grow(len(o.raw) + 256)
	buf.WriteString(domSemantic)
	buf.WriteByte(0)
	buf.WriteString(`{"kind":`)
	writeCanonicalString(&buf, o.entry.Kind)
	buf.WriteString(`,"object":`)
	buf.Write(o.raw[:len(o.raw)-1])
	buf.WriteString(`,"object_schema_version":`)
	writeCanonicalString(&buf, o.entry.Schema)
	buf.WriteByte('}')
	return sha256Digest(buf.Bytes()), true
}

// semanticIdentity recomputes the semantic identity of a regular object
// (docs/ledger.md, Canonical objects).
func semanticIdentity(e *entry, doc map[string]any) (string, bool) {
	switch e.Kind {
	case kindAuthority:
		return getDigest(doc, "authority_state_sha256")
	case kindRevocation:
		return getDigest(doc, "revocation_state_sha256")
	case kindDecision:
		d, err := domainDigest(domDecisionReceipt, pick(doc, "decision_identity_sha256", "decision_revision", "evidence_class"))
		return d, err == nil
	}
	d, err := domainDigest(domSemantic, map[string]any{
		"kind":                  e.Kind,
		"object_schema_version": e.Schema,
		"object":                doc,
	})
	return d, err == nil
}
