package ledger

import (
	"bytes"
	"strconv"
)

// entry is one validated evidence-registry entry.
type entry struct {
	Kind       string
	Schema     string
	Media      string
	Path       string
	SHA256     string
	Size       int64
	SemanticID string
	Subject    string // "" when null
	Digest     string // registry_entry_sha256
	Bundle     bool   // a <kind>-sigstore-bundle entry
	Index      int
}

// signerPointer is a signer-registry pointer (docs/ledger.md, Registry).
type signerPointer struct {
	Path     string
	SHA256   string
	Identity string
	Revision int64
	raw      map[string]any
}

// registry is a parsed evidence registry that passed its checks (or failed with
// detail).
type registry struct {
	sha256   string
	revision int64
	prevHead string // "" when null
	head     string
	signer   *signerPointer
	history  []signerPointer
	legacy   bool
	entries  []*entry
	byDigest map[string]*entry
	byObject map[string]*entry
	byPath   map[string]*entry
	rawDoc   map[string]any
}

// parseEntryFields validates the eight entry fields of m (docs/ledger.md,
// Registry) and returns an entry with its recomputed digest. ok is false on
// any shape violation.
func parseEntryFields(m map[string]any) (*entry, bool) {
	e := &entry{}
	var ok bool
	if e.Kind, ok = getStr(m, "kind"); !ok || !isKind(e.Kind) {
		return nil, false
	}
	schema, media, bundle, known := kindContract(e.Kind)
	if !known {
		return nil, false
	}
	e.Bundle = bundle
	if e.Schema, ok = getStr(m, "object_schema_version"); !ok || e.Schema != schema {
		return nil, false
	}
	if e.Media, ok = getStr(m, "object_media_type"); !ok || e.Media != media {
		return nil, false
	}
	if e.SHA256, ok = getDigest(m, "object_sha256"); !ok {
		return nil, false
	}
	if e.Path, ok = getStr(m, "object_path"); !ok || e.Path != objectPath(e.SHA256, e.Kind) {
		return nil, false
	}
	if e.Size, ok = getInt(m, "size_bytes"); !ok || e.Size < 1 {
		return nil, false
	}
	if e.SemanticID, ok = getDigest(m, "semantic_identity_sha256"); !ok {
		return nil, false
	}
	subj, isNull, ok := getStrOrNull(m, "subject_sha256")
	if !ok {
		return nil, false
	}
	if bundle {
		if isNull || !isDigest(subj) {
			return nil, false
		}
		e.Subject = subj
	} else if !isNull {
		return nil, false
	}
	e.Digest = entryDigest(e)
	return e, true
}

// entryDigest is D(entry domain, {the 8 entry fields}), written directly in
// canonical key order (the fields are validated strings and an integer), so
// that a large registry does not build and sort a map per entry.
func entryDigest(e *entry) string {
	s := canonPool.Get().(*canonScratch)
	defer canonPool.Put(s)
	buf := bytes.NewBuffer(s.a[:0]) // a pooled buffer: the bytes are hashed and dropped
	defer func() { s.a = buf.Bytes() }()
	buf.WriteString(domRegistryEntry)
	buf.WriteByte(0)
	field := func(first bool, k, v string) {
		if !first {
			buf.WriteByte(',')
		}
		writeCanonicalString(buf, k)
		buf.WriteByte(':')
		writeCanonicalString(buf, v)
	}
	buf.WriteByte('{')
	field(true, "kind", e.Kind)
	field(false, "object_media_type", e.Media)
	field(false, "object_path", e.Path)
	field(false, "object_schema_version", e.Schema)
	field(false, "object_sha256", e.SHA256)
	field(false, "semantic_identity_sha256", e.SemanticID)
	buf.WriteString(`,"size_bytes":`)
	buf.WriteString(strconv.FormatInt(e.Size, 10))
	if e.Subject == "" {
		buf.WriteString(`,"subject_sha256":null}`)
	} else {
		field(false, "subject_sha256", e.Subject)
		buf.WriteByte('}')
	}
	return sha256Digest(buf.Bytes())
}

// sameFields reports whether two entries carry identical entry fields.
func (e *entry) sameFields(o *entry) bool {
	return e.Kind == o.Kind && e.Schema == o.Schema && e.Media == o.Media &&
		e.Path == o.Path && e.SHA256 == o.SHA256 && e.Size == o.Size &&
		e.SemanticID == o.SemanticID && e.Subject == o.Subject
}

func parsePointer(v any) (signerPointer, bool) {
	m, ok := asObj(v)
	if !ok || !exactKeys(m, "schema_version", "object_path", "object_sha256", "registry_identity_sha256", "registry_revision") {
		return signerPointer{}, false
	}
	var p signerPointer
	p.raw = m
	if s, _ := getStr(m, "schema_version"); s != schemaSignerPointer {
		return p, false
	}
	if p.SHA256, ok = getDigest(m, "object_sha256"); !ok {
		return p, false
	}
	if p.Path, ok = getStr(m, "object_path"); !ok || p.Path != signerRegistryPath(p.SHA256) {
		return p, false
	}
	if p.Identity, ok = getDigest(m, "registry_identity_sha256"); !ok {
		return p, false
	}
	if p.Revision, ok = getInt(m, "registry_revision"); !ok || p.Revision < 1 {
		return p, false
	}
	return p, true
}

// parseRegistry validates an evidence registry document in the order of
// docs/ledger.md, Registry. It returns the registry and "" or the failing detail.
func parseRegistry(raw []byte) (*registry, string) {
	v, err := parseJSON(raw)
	if err != nil {
		return nil, "registry_malformed"
	}
	doc, ok := asObj(v)
	if !ok {
		return nil, "registry_malformed"
	}
	r := &registry{sha256: sha256Digest(raw), rawDoc: doc}
	// 1. Closed keys and constants.
	keys := []string{"$schema", "schema_version", "repository", "repository_id", "repository_owner_id",
		"revision", "previous_registry_head_sha256", "registry_head_sha256", "signer_registry", "entries"}
	if _, has := doc["signer_registry_history"]; has {
		keys = append(keys, "signer_registry_history")
	} else {
		r.legacy = true
	}
	if !exactKeys(doc, keys...) {
		return nil, "registry_malformed"
	}
	if s, _ := getStr(doc, "$schema"); s != schemaRegistryRef {
		return nil, "registry_malformed"
	}
	if s, _ := getStr(doc, "schema_version"); s != schemaRegistry {
		return nil, "registry_malformed"
	}
	if s, _ := getStr(doc, "repository"); s != evidenceRepo {
		return nil, "registry_malformed"
	}
	if s, _ := getStr(doc, "repository_id"); s != evidenceRepoID {
		return nil, "registry_malformed"
	}
	if s, _ := getStr(doc, "repository_owner_id"); s != evidenceRepoOwnerID {
		return nil, "registry_malformed"
	}
	if r.revision, ok = getInt(doc, "revision"); !ok || r.revision < 1 {
		return nil, "registry_malformed"
	}
	prev, isNull, ok := getStrOrNull(doc, "previous_registry_head_sha256")
	if !ok || (!isNull && !isDigest(prev)) {
		return nil, "registry_malformed"
	}
	r.prevHead = prev
	if r.head, ok = getDigest(doc, "registry_head_sha256"); !ok {
		return nil, "registry_malformed"
	}
	rawEntries, ok := asList(doc["entries"])
	if !ok {
		return nil, "registry_malformed"
	}
	// 2. Signer pointer and history.
	var histRaw []any
	if !r.legacy {
		if histRaw, ok = asList(doc["signer_registry_history"]); !ok {
			return nil, "registry_malformed"
		}
	}
	if doc["signer_registry"] == nil {
		if len(rawEntries) > 0 {
			return nil, "registry_malformed"
		}
	} else if r.legacy {
		return nil, "registry_malformed"
	}
	for i, h := range histRaw {
		p, ok := parsePointer(h)
		if !ok || p.Revision != int64(i+1) {
			return nil, "registry_signer_history_invalid"
		}
		r.history = append(r.history, p)
	}
	if doc["signer_registry"] == nil && len(r.history) > 0 {
		return nil, "registry_signer_history_invalid"
	}
	if doc["signer_registry"] != nil {
		p, ok := parsePointer(doc["signer_registry"])
		if !ok || len(r.history) == 0 || !jsonEqual(p.raw, r.history[len(r.history)-1].raw) {
			return nil, "registry_signer_history_invalid"
		}
		r.signer = &p
	}
	// 3. Entries.
	r.entries = make([]*entry, 0, len(rawEntries))
	r.byDigest = make(map[string]*entry, len(rawEntries))
	r.byObject = make(map[string]*entry, len(rawEntries))
	r.byPath = make(map[string]*entry, len(rawEntries))
	digests := make([]any, 0, len(rawEntries))
	for i, re := range rawEntries {
		m, ok := asObj(re)
		if !ok || len(m) != 9 {
			return nil, "registry_malformed"
		}
		e, ok := parseEntryFields(m)
		if !ok {
			return nil, "registry_malformed"
		}
		stored, ok := getDigest(m, "registry_entry_sha256")
		if !ok {
			return nil, "registry_malformed"
		}
		if stored != e.Digest {
			return nil, "registry_entry_digest_invalid"
		}
		e.Index = i
		if r.byDigest[e.Digest] != nil || r.byPath[e.Path] != nil || r.byObject[e.SHA256] != nil {
			return nil, "registry_entry_duplicate"
		}
		r.byDigest[e.Digest] = e
		r.byPath[e.Path] = e
		r.byObject[e.SHA256] = e
		r.entries = append(r.entries, e)
		digests = append(digests, e.Digest)
	}
	// 4. Adjacency, in one linear pass.
	for i := 0; i < len(r.entries); i++ {
		e := r.entries[i]
		if e.Bundle {
			return nil, "registry_bundle_not_adjacent"
		}
		if i+1 >= len(r.entries) {
			return nil, "registry_bundle_not_adjacent"
		}
		b := r.entries[i+1]
		if !b.Bundle || b.Kind != e.Kind+bundleSuffix || b.Subject != e.SHA256 {
			return nil, "registry_bundle_not_adjacent"
		}
		i++
	}
	// 5. Semantic identities of regular entries are unique per kind.
	seen := make(map[[2]string]bool, len(r.entries)/2)
	for _, e := range r.entries {
		if e.Bundle {
			continue
		}
		k := [2]string{e.Kind, e.SemanticID}
		if seen[k] {
			return nil, "registry_semantic_identity_duplicate"
		}
		seen[k] = true
	}
	// 6. Head.
	head := map[string]any{
		"schema_version":                schemaRegistry,
		"repository":                    evidenceRepo,
		"repository_id":                 evidenceRepoID,
		"repository_owner_id":           evidenceRepoOwnerID,
		"revision":                      doc["revision"],
		"previous_registry_head_sha256": doc["previous_registry_head_sha256"],
		"signer_registry":               doc["signer_registry"],
		"entry_sha256s":                 digests,
	}
	if !r.legacy {
		head["signer_registry_history"] = doc["signer_registry_history"]
	}
	d, err := domainDigest(domRegistryHead, head)
	if err != nil || d != r.head {
		return nil, "registry_head_invalid"
	}
	return r, ""
}

// adjacentBundle returns the bundle entry directly after regular entry e.
func (r *registry) adjacentBundle(e *entry) *entry {
	if e.Index+1 < len(r.entries) {
		b := r.entries[e.Index+1]
		if b.Bundle && b.Subject == e.SHA256 {
			return b
		}
	}
	return nil
}

// lastOfKind returns the last entry of a kind, or nil.
func (r *registry) lastOfKind(kind string) *entry {
	for i := len(r.entries) - 1; i >= 0; i-- {
		if r.entries[i].Kind == kind {
			return r.entries[i]
		}
	}
	return nil
}

// headChain validates previous registries against the current one
// (docs/ledger.md, Registry) and returns the set of bound (revision, head)
// pairs, or a detail.
func headChain(current *registry, previous []*registry) (map[string]bool, string) {
	regs := append([]*registry{current}, previous...)
	// Newest first.
	for i := 1; i < len(regs); i++ {
		for j := i; j > 0 && regs[j].revision > regs[j-1].revision; j-- {
			regs[j], regs[j-1] = regs[j-1], regs[j]
		}
	}
	if regs[0] != current {
		return nil, "registry_not_append_only"
	}
	bound := map[string]bool{}
	for i, r := range regs {
		bound[pairKey(r.revision, r.head)] = true
		if i+1 < len(regs) {
			o := regs[i+1]
			if r.revision != o.revision+1 || r.prevHead != o.head || len(o.entries) > len(r.entries) ||
				len(o.history) > len(r.history) {
				return nil, "registry_not_append_only"
			}
			for k, oe := range o.entries {
				if oe.Digest != r.entries[k].Digest {
					return nil, "registry_not_append_only"
				}
			}
			for k := range o.history {
				if !jsonEqual(o.history[k].raw, r.history[k].raw) {
					return nil, "registry_not_append_only"
				}
			}
		}
	}
	oldest := regs[len(regs)-1]
	if oldest.prevHead != "" {
		bound[pairKey(oldest.revision-1, oldest.prevHead)] = true
	}
	return bound, ""
}

func pairKey(rev int64, head string) string { return strconv.FormatInt(rev, 10) + "|" + head }
