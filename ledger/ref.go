package ledger

import (
	"fmt"
)

// Reference is a validated object reference (docs/ledger.md, Rows): a pointer from a
// ledger row to one registry entry.
type Reference struct {
	RegistrySourceCommit string
	RegistryRevision     int64
	RegistryHeadSHA256   string
	RegistryEntrySHA256  string
	Kind                 string
	ObjectSHA256         string
	ObjectPath           string
	SizeBytes            int64
	SubjectSHA256        string // "" when null

	entry *entry
}

var referenceKeys = []string{
	"schema_version", "repository", "repository_id", "repository_owner_id", "registry_source_commit",
	"registry_revision", "registry_head_sha256", "registry_entry_sha256",
	"kind", "object_schema_version", "object_media_type", "object_path",
	"object_sha256", "size_bytes", "semantic_identity_sha256", "subject_sha256",
}

// ParseReference validates a parsed JSON value as an object reference: its 16
// keys, the evidence-repository constants, the 8 entry fields (docs/ledger.md,
// Registry) and the recomputed registry_entry_sha256. It does not resolve the
// reference. The error wraps [ErrRefParse].
func ParseReference(v any) (*Reference, error) {
	m, ok := asObj(v)
	if !ok {
		return nil, fmt.Errorf("%w: not an object", ErrRefParse)
	}
	if !exactKeys(m, referenceKeys...) {
		return nil, fmt.Errorf("%w: keys", ErrRefParse)
	}
	if s, _ := getStr(m, "schema_version"); s != schemaReference {
		return nil, fmt.Errorf("%w: schema_version", ErrRefParse)
	}
	if s, _ := getStr(m, "repository"); s != evidenceRepo {
		return nil, fmt.Errorf("%w: repository", ErrRefParse)
	}
	if s, _ := getStr(m, "repository_id"); s != evidenceRepoID {
		return nil, fmt.Errorf("%w: repository_id", ErrRefParse)
	}
	if s, _ := getStr(m, "repository_owner_id"); s != evidenceRepoOwnerID {
		return nil, fmt.Errorf("%w: repository_owner_id", ErrRefParse)
	}
	r := &Reference{}
	if r.RegistrySourceCommit, ok = getStr(m, "registry_source_commit"); !ok || !isHex40(r.RegistrySourceCommit) {
		return nil, fmt.Errorf("%w: registry_source_commit", ErrRefParse)
	}
	if r.RegistryRevision, ok = getInt(m, "registry_revision"); !ok || r.RegistryRevision < 1 {
		return nil, fmt.Errorf("%w: registry_revision", ErrRefParse)
	}
	if r.RegistryHeadSHA256, ok = getDigest(m, "registry_head_sha256"); !ok {
		return nil, fmt.Errorf("%w: registry_head_sha256", ErrRefParse)
	}
	if r.RegistryEntrySHA256, ok = getDigest(m, "registry_entry_sha256"); !ok {
		return nil, fmt.Errorf("%w: registry_entry_sha256", ErrRefParse)
	}
	e, ok := parseEntryFields(m)
	if !ok {
		return nil, fmt.Errorf("%w: entry fields", ErrRefParse)
	}
	if e.Digest != r.RegistryEntrySHA256 {
		return nil, fmt.Errorf("%w: registry_entry_sha256 does not match the entry fields", ErrRefParse)
	}
	r.Kind, r.ObjectSHA256, r.ObjectPath, r.SizeBytes, r.SubjectSHA256 = e.Kind, e.SHA256, e.Path, e.Size, e.Subject
	r.entry = e
	return r, nil
}
