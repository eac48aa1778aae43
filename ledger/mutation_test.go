package ledger

import (
	"context"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

// Documents a mutation is verified through. Registry mutations use a ledger
// input: a target projection pins the registry bytes and would report
// registry_not_pinned_by_projection first.
const (
	relDoc  = "production-lifecycle-admissions.json"
	wfDoc   = "production-workflow-admissions.json"
	wprDoc  = "public/production-workflow-admissions.json"
	tprDoc  = "public/production-lifecycle.json"
	rootDoc = "" // the whole evidence root
)

const (
	kRel = "qualification-release"
	kWf  = "qualification-admission"
)

// mutation is one tamper kind and the verdict it must produce.
type mutation struct {
	name string
	doc  string
	// mutate configures the generation (hooks, specs).
	mutate func(o *lg.Options)
	// pins overrides the pinned signer-registry identities.
	pins []string
	// want: the verdict of target (or workflow row when target is "") row.
	target         string
	row            int
	reason, detail string
	cause          string
	// all: every target (or every row) has this verdict.
	all bool
}

func onRelease(target string, f func(o map[string]any)) func(lg.ReleaseSpec, map[string]any) {
	return func(s lg.ReleaseSpec, o map[string]any) {
		if s.Target == target {
			f(o)
		}
	}
}

func onWorkflow(i int, f func(o map[string]any)) func(int, map[string]any) {
	return func(j int, o map[string]any) {
		if i == j {
			f(o)
		}
	}
}

func onEnvelope(kind string, idx int, f func(e *lg.Envelope)) func(string, int, *lg.Envelope) {
	return func(k string, i int, e *lg.Envelope) {
		if k == kind && i == idx {
			f(e)
		}
	}
}

func onStatement(kind string, idx int, f func(st map[string]any)) func(string, int, map[string]any) {
	return func(k string, i int, st map[string]any) {
		if k == kind && i == idx {
			f(st)
		}
	}
}

func resign(e *lg.Envelope) {
	e.Sigs[0].Sig = ed25519.Sign(lg.TestKey(), lg.PAE(e.PayloadType, e.Payload))
}

func editPayload(e *lg.Envelope, f func(st map[string]any)) {
	var st map[string]any
	dec := json.NewDecoder(strings.NewReader(string(e.Payload)))
	dec.UseNumber()
	_ = dec.Decode(&st)
	f(st)
	e.Payload = lg.CanonicalLF(st)
}

func after(f func(r *lg.Root)) func(o *lg.Options) {
	return func(o *lg.Options) { o.Hooks.AfterBuild = f }
}

func daysAgo(n int) time.Time { return genNow.Add(-time.Duration(n) * 24 * time.Hour) }

func tp(t time.Time) *time.Time { return &t }

// releases replaces the release specs: the six other targets at sequence 1
// plus the given agent rows.
func releases(agent ...lg.ReleaseSpec) func(o *lg.Options) {
	return func(o *lg.Options) {
		o.Releases = agent
		for _, t := range lg.Targets[1:] {
			o.Releases = append(o.Releases, lg.ReleaseSpec{Target: t, Seq: 1, Issued: daysAgo(30)})
		}
	}
}

func chain(fs ...func(o *lg.Options)) func(o *lg.Options) {
	return func(o *lg.Options) {
		for _, f := range fs {
			f(o)
		}
	}
}

var mutations = []mutation{
	// Signatures and payloads.
	{name: "signature byte flipped", doc: relDoc, target: "agent", reason: "unverifiable", detail: "signature_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Sigs[0].Sig[7] ^= 0x40 })
		}},
	{name: "workflow signature byte flipped", doc: wfDoc, row: 0, reason: "unverifiable", detail: "signature_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kWf, 0, func(e *lg.Envelope) { e.Sigs[0].Sig[63] ^= 0x01 })
		}},
	{name: "payload byte changed, statement still canonical", doc: relDoc, target: "agent", reason: "unverifiable", detail: "signature_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) {
				editPayload(e, func(st map[string]any) { st["request_id_sha256"] = lg.Fake("other request") })
			})
		}},
	{name: "signature over the raw payload, not the PAE", doc: relDoc, target: "agent", reason: "unverifiable", detail: "signature_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.Sign = func(k string, i int, pae, payload []byte) []byte {
				if k == kRel && i == 0 {
					return payload
				}
				return pae
			}
		}},
	{name: "wrong key id, well-formed, everywhere", doc: relDoc, target: "agent", reason: "unverifiable", detail: "key_id_mismatch",
		mutate: func(o *lg.Options) {
			const other = "oa-public-trust-ed25519-0123456789abcdef"
			o.Hooks.Statement = onStatement(kRel, 0, func(st map[string]any) { st["key_id"] = other })
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Sigs[0].KeyID, e.Hint = other, other })
		}},
	{name: "signature keyid differs from hint", doc: relDoc, target: "agent", reason: "unverifiable", detail: "key_id_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Sigs[0].KeyID = "oa-public-trust-ed25519-0123456789abcdef" })
		}},
	{name: "hint differs from statement key id", doc: wfDoc, row: 0, reason: "unverifiable", detail: "key_id_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kWf, 0, func(e *lg.Envelope) { e.Hint = "oa-public-trust-ed25519-0123456789abcdef" })
		}},
	{name: "signature not canonical base64 (unpadded)", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Sigs[0].SigB64 = base64.RawStdEncoding.EncodeToString(e.Sigs[0].Sig) })
		}},
	{name: "payload base64 url-safe alphabet", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) {
				e.PayloadB64 = base64.URLEncoding.EncodeToString(e.Payload) + "\n"
			})
		}},
	{name: "bundle with an extra tlogEntries key", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Extra = map[string]any{"tlogEntries": []any{}} })
		}},
	{name: "two signatures with one key id", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Sigs = append(e.Sigs, e.Sigs[0]) })
		}},
	{name: "payload type changed", doc: wfDoc, row: 0, reason: "unverifiable", detail: "bundle_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kWf, 0, func(e *lg.Envelope) { e.PayloadType = "application/vnd.in-toto+json"; resign(e) })
		}},
	{name: "bundle not canonical, registered as is", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_not_canonical",
		mutate: func(o *lg.Options) { o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) { e.Pretty = true }) }},
	{name: "bundle byte flipped after registration", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_digest_mismatch",
		mutate: after(func(r *lg.Root) { r.FlipByte(lg.Path(r.Releases[0].BundleEntr)) })},
	{name: "latest bundle absent", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_missing",
		mutate: after(func(r *lg.Root) { delete(r.Files, lg.Path(r.Releases[0].BundleEntr)) })},
	{name: "statement not canonical (re-signed)", doc: relDoc, target: "agent", reason: "unverifiable", detail: "statement_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Envelope = onEnvelope(kRel, 0, func(e *lg.Envelope) {
				e.Payload = append([]byte(" "), e.Payload...)
				resign(e)
			})
		}},
	{name: "statement missing a key", doc: relDoc, target: "agent", reason: "unverifiable", detail: "statement_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kRel, 0, func(st map[string]any) { delete(st, "request_id_sha256") })
		}},
	{name: "statement timestamp not whole-second UTC", doc: wfDoc, row: 0, reason: "unverifiable", detail: "statement_malformed",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kWf, 0, func(st map[string]any) { st["issued_at"] = "2026-05-12T00:00:00+00:00" })
		}},
	{name: "statement signs another object digest", doc: relDoc, target: "agent", reason: "mismatched", detail: "statement_binding_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kRel, 0, func(st map[string]any) { st["object_sha256"] = lg.Fake("another object") })
		}},
	{name: "statement source issuer differs from the object's", doc: wfDoc, row: 0, reason: "mismatched", detail: "statement_binding_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kWf, 0, func(st map[string]any) {
				st["source_issuer"].(map[string]any)["source_commit"] = strings.Repeat("a", 40)
			})
		}},
	{name: "statement binds another authority state", doc: wfDoc, row: 0, reason: "mismatched", detail: "trust_state_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kWf, 0, func(st map[string]any) { st["authority_state_sha256"] = lg.Fake("old authority") })
		}},
	{name: "admission binds an unknown revocation state", doc: relDoc, target: "agent", reason: "mismatched", detail: "trust_state_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePre = onRelease("agent", func(obj map[string]any) { obj["revocation_state_sha256"] = lg.Fake("unknown revocation state") })
		}},
	{name: "signing environment not allowed", doc: relDoc, target: "agent", reason: "unverifiable", detail: "signer_not_authorized",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kRel, 0, func(st map[string]any) {
				st["signing_authority"].(map[string]any)["environment"] = "production-release-admission"
			})
		}},

	// Objects.
	{name: "object byte flipped after registration", doc: wfDoc, row: 0, reason: "unverifiable", detail: "object_digest_mismatch",
		mutate: after(func(r *lg.Root) { r.FlipByte(lg.Path(r.Workflows[0].Entry)) })},
	{name: "release object byte flipped: row unattributed", doc: relDoc, target: "agent", all: true, reason: "unverifiable",
		detail: "ledger_row_unattributed", cause: "object_digest_mismatch",
		mutate: after(func(r *lg.Root) { r.FlipByte(lg.Path(r.Releases[3].Entry)) })},
	{name: "object absent", doc: wfDoc, row: 1, reason: "unverifiable", detail: "object_missing",
		mutate: after(func(r *lg.Root) { delete(r.Files, lg.Path(r.Workflows[1].Entry)) })},
	{name: "object not canonical, registered as is", doc: wfDoc, row: 0, reason: "unverifiable", detail: "object_not_canonical",
		mutate: func(o *lg.Options) {
			o.Hooks.ObjectBytes = func(k string, i int, raw []byte) []byte {
				if k == kWf && i == 0 {
					return append([]byte("  "), raw...)
				}
				return raw
			}
		}},
	{name: "object with a float", doc: relDoc, target: "agent", reason: "unverifiable", detail: "object_not_canonical",
		mutate: func(o *lg.Options) {
			o.Hooks.ObjectBytes = func(k string, i int, raw []byte) []byte {
				if k == kRel && i == 0 {
					return []byte(strings.Replace(string(raw), `"size_bytes":1234`, `"size_bytes":1234.0`, 1))
				}
				return raw
			}
		}},
	{name: "admission id not recomputed", doc: relDoc, target: "agent", reason: "unverifiable", detail: "admission_id_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePost = onRelease("agent", func(obj map[string]any) { obj["admission_id_sha256"] = lg.Fake("id") })
		}},
	{name: "workflow admission id not recomputed", doc: wfDoc, row: 1, reason: "unverifiable", detail: "admission_id_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.WorkflowPost = onWorkflow(1, func(obj map[string]any) { obj["admission_id_sha256"] = lg.Fake("id") })
		}},
	{name: "release digest not recomputed", doc: relDoc, target: "agent", reason: "unverifiable", detail: "derived_digest_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePost = onRelease("agent", func(obj map[string]any) {
				obj["release_sha256"] = lg.Fake("release")
				obj["admission_id_sha256"] = lg.D("OpenAdapt qualification release admission v2", without(obj, "admission_id_sha256"))
			})
		}},
	{name: "verdict not accepted", doc: relDoc, target: "agent", reason: "unverifiable", detail: "object_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePre = onRelease("agent", func(obj map[string]any) { obj["verdict"] = "rejected" })
		}},
	{name: "object with an extra key", doc: relDoc, target: "agent", reason: "unverifiable", detail: "object_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePre = onRelease("agent", func(obj map[string]any) { obj["note"] = "x" })
		}},
	{name: "repository id as a number", doc: relDoc, target: "agent", reason: "unverifiable", detail: "object_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePre = onRelease("agent", func(obj map[string]any) {
				obj["release"].(map[string]any)["source_repository_id"] = int64(1136136670)
			})
		}},
	{name: "local identity opening weakened", doc: wfDoc, row: 0, reason: "unverifiable", detail: "object_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.WorkflowPre = onWorkflow(0, func(obj map[string]any) {
				obj["local_identity_opening"].(map[string]any)["maximum_age_seconds"] = int64(61)
			})
		}},
	{name: "window not ordered", doc: relDoc, target: "agent", reason: "unverifiable", detail: "window_invalid",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30), NotBefore: daysAgo(29)})},
	{name: "claim scope of another target", doc: relDoc, target: "agent", reason: "mismatched", detail: "target_contract_mismatch",
		mutate: func(o *lg.Options) {
			o.Hooks.ReleasePre = onRelease("agent", func(obj map[string]any) { obj["claim_scope"] = "production_capture" })
		}},
	{name: "semantic identity mismatch", doc: wfDoc, row: 0, reason: "unverifiable", detail: "semantic_identity_mismatch",
		mutate: after(func(r *lg.Root) {
			e := r.Workflows[0].Entry
			e["semantic_identity_sha256"] = lg.Fake("semantic")
			e["registry_entry_sha256"] = lg.EntryDigest(e)
			r.RecomputeHead()
			r.Rereference()
		})},

	// Registry entries and chain links (global).
	{name: "registry entry digest changed", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_entry_digest_invalid",
		mutate: after(func(r *lg.Root) { r.Workflows[1].Entry["registry_entry_sha256"] = lg.Fake("entry") })},
	{name: "registry entry field changed", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_entry_digest_invalid",
		mutate: after(func(r *lg.Root) { r.Workflows[1].Entry["size_bytes"] = int64(7) })},
	{name: "registry head changed", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_head_invalid",
		mutate: after(func(r *lg.Root) { r.Registry["registry_head_sha256"] = lg.Fake("head") })},
	{name: "entries reordered: bundle not adjacent", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_bundle_not_adjacent",
		mutate: after(func(r *lg.Root) {
			es := r.Registry["entries"].([]any)
			n := len(es)
			es[n-3], es[n-2] = es[n-2], es[n-3]
			r.RecomputeHead()
		})},
	{name: "trailing regular entry", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_bundle_not_adjacent",
		mutate: after(func(r *lg.Root) {
			es := r.Registry["entries"].([]any)
			r.Registry["entries"] = es[:len(es)-1]
			r.RecomputeHead()
		})},
	{name: "duplicated entries", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_entry_duplicate",
		mutate: after(func(r *lg.Root) {
			es := r.Registry["entries"].([]any)
			r.Registry["entries"] = append(es, es[len(es)-2], es[len(es)-1])
			r.RecomputeHead()
		})},
	{name: "duplicate semantic identity", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_semantic_identity_duplicate",
		mutate: after(func(r *lg.Root) {
			e := r.Workflows[1].Entry
			e["semantic_identity_sha256"] = r.Workflows[0].Entry["semantic_identity_sha256"]
			e["registry_entry_sha256"] = lg.EntryDigest(e)
			r.RecomputeHead()
		})},
	{name: "registry with an extra key", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_malformed",
		mutate: after(func(r *lg.Root) { r.Registry["note"] = "x" })},
	{name: "registry repository id as a number", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_malformed",
		mutate: after(func(r *lg.Root) { r.Registry["repository_id"] = int64(858454062) })},
	{name: "signer history revision gap", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_signer_history_invalid",
		mutate: after(func(r *lg.Root) {
			r.Registry["signer_registry_history"].([]any)[0].(map[string]any)["registry_revision"] = int64(2)
			r.RecomputeHead()
		})},
	{name: "registry absent", doc: wfDoc, all: true, reason: "unverifiable", detail: "registry_missing",
		mutate: after(func(r *lg.Root) { r.Registry = nil })},
	{name: "reference to an unbound revision", doc: wfDoc, row: 0, reason: "unverifiable", detail: "registry_revision_unbound",
		mutate: after(func(r *lg.Root) {
			r.WorkflowLedger["admissions"].([]any)[0].(map[string]any)["registry_revision"] = int64(5)
		})},
	{name: "reference to an unregistered entry", doc: wfDoc, row: 0, reason: "unverifiable", detail: "not_registered",
		mutate: after(func(r *lg.Root) {
			ref := r.WorkflowLedger["admissions"].([]any)[0].(map[string]any)
			ref["size_bytes"] = int64(99)
			ref["registry_entry_sha256"] = lg.EntryDigest(ref)
		})},
	{name: "reference with a missing key", doc: wfDoc, row: 0, reason: "unverifiable", detail: "row_malformed",
		mutate: after(func(r *lg.Root) {
			delete(r.WorkflowLedger["admissions"].([]any)[0].(map[string]any), "registry_source_commit")
		})},
	{name: "reference entry digest does not match its fields", doc: wfDoc, row: 1, reason: "unverifiable", detail: "row_malformed",
		mutate: after(func(r *lg.Root) {
			r.WorkflowLedger["admissions"].([]any)[1].(map[string]any)["registry_entry_sha256"] = lg.Fake("x")
		})},
	{name: "release row of the wrong kind", doc: relDoc, target: "agent", all: true, reason: "unverifiable", detail: "ledger_row_unattributed", cause: "row_malformed",
		mutate: after(func(r *lg.Root) {
			rows := r.ReleaseLedger["admissions"].([]any)
			r.ReleaseLedger["admissions"] = append(rows, r.Reference(r.Workflows[0].Entry))
		})},

	// Signer registry (global).
	{name: "signer registry not pinned", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_not_pinned",
		pins: []string{PinnedSignerRegistryIdentity}},
	{name: "signer registry file changed", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_invalid",
		mutate: after(func(r *lg.Root) { r.FlipByte(r.SignerPath) })},
	{name: "signer registry with an expiry", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.SignerRegistry = func(doc map[string]any) { doc["expires_at"] = lg.TS(genNow.Add(400 * 24 * time.Hour)) }
		}},
	{name: "signer key id not derived from the key", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.SignerRegistry = func(doc map[string]any) {
				doc["signers"].([]any)[0].(map[string]any)["key_id"] = "qa-ed25519-0123456789abcdef"
			}
		}},
	{name: "signer registry generated after T", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_not_active",
		mutate: func(o *lg.Options) {
			o.Hooks.SignerRegistry = func(doc map[string]any) { doc["generated_at"] = lg.TS(genNow.Add(24 * time.Hour)) }
		}},
	{name: "signer registry absent", doc: wfDoc, all: true, reason: "unverifiable", detail: "signer_registry_missing",
		mutate: after(func(r *lg.Root) { delete(r.Files, r.SignerPath) })},

	// Trust state (global).
	{name: "authority receipt byte flipped", doc: wfDoc, all: true, reason: "unverifiable", detail: "trust_state_invalid",
		mutate: after(func(r *lg.Root) { r.FlipByte(lg.Path(r.Receipts[0].Entry)) })},
	{name: "authority receipt binds another signer registry", doc: wfDoc, all: true, reason: "unverifiable", detail: "trust_state_invalid",
		mutate: func(o *lg.Options) {
			o.Hooks.Authority = func(doc map[string]any) { doc["signer_registry_revision"] = int64(2) }
		}},
	{name: "revocation receipt absent", doc: wfDoc, all: true, reason: "unverifiable", detail: "trust_state_missing",
		mutate: after(func(r *lg.Root) { delete(r.Files, lg.Path(r.Receipts[1].Entry)) })},
	{name: "authority receipt not yet valid", doc: wfDoc, all: true, reason: "unverifiable", detail: "trust_state_not_active",
		mutate: func(o *lg.Options) {
			o.Hooks.Authority = func(doc map[string]any) {
				doc["not_before"], doc["observed_at"] = lg.TS(genNow.Add(time.Hour)), lg.TS(genNow.Add(time.Hour))
			}
		}},
	{name: "receipt outer bundle flipped", doc: wfDoc, all: true, reason: "unverifiable", detail: "trust_state_invalid",
		mutate: after(func(r *lg.Root) { r.FlipByte(lg.Path(r.Receipts[1].BundleEntr)) })},

	// Lifecycle.
	{name: "expires_at ≤ T", doc: relDoc, target: "agent", reason: "expired", detail: "expired",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30), Expires: tp(genNow)})},
	{name: "workflow admission expired", doc: wfDoc, row: 0, reason: "expired", detail: "expired",
		mutate: func(o *lg.Options) { o.Workflows[0].Expires = tp(daysAgo(1)) }},
	{name: "statement expired, object until revoked", doc: relDoc, target: "agent", reason: "expired", detail: "expired",
		mutate: func(o *lg.Options) {
			o.Hooks.Statement = onStatement(kRel, 0, func(st map[string]any) { st["expires_at"] = lg.TS(daysAgo(1)) })
		}},
	{name: "admission revoked by object digest", doc: relDoc, target: "agent", reason: "revoked", detail: "admission_revoked",
		mutate: func(o *lg.Options) {
			o.Hooks.R2 = func(r *lg.Root) []any {
				return []any{revocation(kRel, r.Releases[0].Entry["object_sha256"].(string))}
			}
		}},
	{name: "admission revoked by admission id", doc: wfDoc, row: 1, reason: "revoked", detail: "admission_revoked",
		mutate: func(o *lg.Options) {
			o.Hooks.R2 = func(r *lg.Root) []any {
				return []any{revocation(kWf, r.Workflows[1].Object["admission_id_sha256"].(string))}
			}
		}},
	{name: "admission revoked by semantic identity", doc: relDoc, target: "agent", reason: "revoked", detail: "admission_revoked",
		mutate: func(o *lg.Options) {
			o.Hooks.R2 = func(r *lg.Root) []any {
				return []any{revocation(kRel, r.Releases[0].Entry["semantic_identity_sha256"].(string))}
			}
		}},
	{name: "signing key revoked", doc: relDoc, target: "agent", all: true, reason: "revoked", detail: "signer_key_revoked",
		mutate: func(o *lg.Options) {
			o.Hooks.R2 = func(r *lg.Root) []any { return []any{revocation("qualification-signer-key", r.PublicKeySHA256)} }
		}},
	{name: "not_before after T", doc: relDoc, target: "agent", reason: "unverifiable", detail: "not_yet_valid",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: genNow.Add(time.Hour)})},
	{name: "sequence gap (1, 3)", doc: relDoc, target: "agent", reason: "unverifiable", detail: "sequence_invalid",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30)}, lg.ReleaseSpec{Target: "agent", Seq: 3, Issued: daysAgo(20)})},
	{name: "previous admission link broken", doc: relDoc, target: "agent", reason: "unverifiable", detail: "sequence_invalid",
		mutate: chain(
			releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30)}, lg.ReleaseSpec{Target: "agent", Seq: 2, Issued: daysAgo(20)}),
			func(o *lg.Options) {
				o.Hooks.ReleasePre = func(s lg.ReleaseSpec, obj map[string]any) {
					if s.Target == "agent" && s.Seq == 2 {
						obj["release_identity"].(map[string]any)["previous_admission_sha256"] = lg.Fake("previous")
					}
				}
			})},
	{name: "rows out of order", doc: relDoc, target: "agent", reason: "unverifiable", detail: "sequence_invalid",
		mutate: chain(
			releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30)}, lg.ReleaseSpec{Target: "agent", Seq: 2, Issued: daysAgo(20)}),
			after(func(r *lg.Root) {
				rows := r.ReleaseLedger["admissions"].([]any)
				rows[0], rows[1] = rows[1], rows[0]
			}))},
	{name: "lower sequence issued after a higher one", doc: relDoc, target: "agent", reason: "unverifiable", detail: "sequence_time_inversion",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(20)}, lg.ReleaseSpec{Target: "agent", Seq: 2, Issued: daysAgo(30)})},
	{name: "duplicated release row", doc: relDoc, target: "agent", reason: "unverifiable", detail: "duplicate_admission",
		mutate: after(func(r *lg.Root) {
			rows := r.ReleaseLedger["admissions"].([]any)
			r.ReleaseLedger["admissions"] = append([]any{rows[0]}, rows...)
		})},
	{name: "duplicated workflow row", doc: wfDoc, row: 2, reason: "unverifiable", detail: "duplicate_admission",
		mutate: after(func(r *lg.Root) {
			rows := r.WorkflowLedger["admissions"].([]any)
			r.WorkflowLedger["admissions"] = append(rows, rows[0])
		})},
	{name: "latest expired, older valid: never fall back", doc: relDoc, target: "agent", reason: "expired", detail: "expired",
		mutate: releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30)}, lg.ReleaseSpec{Target: "agent", Seq: 2, Issued: daysAgo(20), Expires: tp(daysAgo(1))})},
	{name: "latest bundle absent, older bundle present", doc: relDoc, target: "agent", reason: "unverifiable", detail: "bundle_missing",
		mutate: chain(
			releases(lg.ReleaseSpec{Target: "agent", Seq: 1, Issued: daysAgo(30)}, lg.ReleaseSpec{Target: "agent", Seq: 2, Issued: daysAgo(20)}),
			after(func(r *lg.Root) { delete(r.Files, lg.Path(r.Releases[1].BundleEntr)) }))},

	// Documents and projections.
	{name: "bundle_version label copy differs in the workflow projection", doc: wprDoc, row: 0, reason: "mismatched", detail: "projection_mismatch",
		mutate: after(func(r *lg.Root) { r.WorkflowProj["admissions"].([]any)[0].(map[string]any)["bundle_version"] = "9.9.9" })},
	{name: "workflow projection pins other ledger bytes", doc: wprDoc, all: true, reason: "mismatched", detail: "projection_mismatch",
		mutate: after(func(r *lg.Root) {
			r.WorkflowProj["source"].(map[string]any)["files"].(map[string]any)["admissions"].(map[string]any)["sha256"] = lg.Fake("ledger")
		})},
	{name: "target projection pins another registry", doc: tprDoc, target: "agent", all: true, reason: "unverifiable", detail: "registry_not_pinned_by_projection",
		mutate: after(func(r *lg.Root) {
			r.TargetProjection["source"].(map[string]any)["files"].(map[string]any)["evidence_registry"].(map[string]any)["sha256"] = lg.Fake("registry")
		})},
	{name: "target projection static field changed", doc: tprDoc, target: "agent", reason: "mismatched", detail: "projection_mismatch",
		mutate: after(func(r *lg.Root) {
			r.TargetProjection["targets"].([]any)[0].(map[string]any)["display_name"] = "OpenAdapt Agent Pro"
		})},
	{name: "projection disagrees with the ledger", doc: rootDoc, target: "agent", reason: "mismatched", detail: "projection_disagrees",
		mutate: after(func(r *lg.Root) {
			tm := r.TargetProjection["targets"].([]any)[0].(map[string]any)
			tm["admission_history"], tm["latest_admission"] = []any{}, nil
		})},
	{name: "ledger envelope with another policy", doc: relDoc, target: "agent", all: true, reason: "unverifiable", detail: "ledger_malformed",
		mutate: after(func(r *lg.Root) { r.ReleaseLedger["policy_sha256"] = lg.Fake("policy") })},
	{name: "retained v1 row", doc: relDoc, target: "agent", all: true, reason: "unverifiable", detail: "v1_row_unsupported",
		mutate: after(func(r *lg.Root) {
			r.ReleaseLedger["admissions"] = append(r.ReleaseLedger["admissions"].([]any), map[string]any{"admission_id": "x"})
		})},
}

func revocation(kind, id string) map[string]any {
	return map[string]any{"subject_kind": kind, "subject_id": id, "revoked_at": lg.TS(daysAgo(2)), "reason_code": "test"}
}

// TestMutations generates an evidence root per tamper kind and checks that
// each is rejected with the right reason and detail, never a panic.
func TestMutations(t *testing.T) {
	if len(mutations) < 40 {
		t.Fatalf("only %d mutation kinds", len(mutations))
	}
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			o := genOptions(t)
			if m.mutate != nil {
				m.mutate(&o)
			}
			dir, r := generate(t, o)
			pins := m.pins
			if pins == nil {
				pins = []string{r.SignerIdentity}
			}
			v, err := NewVerifier(Trust{SignerRegistryIdentities: pins}, WithAt(genAt), WithEvidenceRoot(dir))
			if err != nil {
				t.Fatal(err)
			}
			res, err := v.Verify(context.Background(), Path(filepath.Join(dir, m.doc)))
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			check := func(what, reason, detail, cause string) {
				t.Helper()
				if reason != m.reason || detail != m.detail || (m.cause != "" && cause != m.cause) {
					t.Errorf("%s: got %s/%s (cause %q), want %s/%s (cause %q)", what, reason, detail, cause, m.reason, m.detail, m.cause)
				}
			}
			if m.target != "" {
				for _, tr := range res.Targets {
					if tr.Target == m.target || m.all {
						check(tr.Target, deref(tr.Reason), deref(tr.Detail), deref(tr.Cause))
					}
				}
				if len(res.Targets) == 0 {
					t.Fatal("no targets")
				}
			} else {
				if len(res.WorkflowAdmissions) <= m.row {
					t.Fatalf("only %d workflow rows", len(res.WorkflowAdmissions))
				}
				for _, w := range res.WorkflowAdmissions {
					if w.Index == m.row || m.all {
						check("row "+string(rune('0'+w.Index)), deref(w.Reason), deref(w.Detail), deref(w.Cause))
					}
				}
			}
			// Mismatches and failed checks make integrity failed; expiry,
			// revocation and not-yet-valid leave it verified; absent files
			// make it incomplete.
			want := IntegrityFailed
			switch {
			case m.reason == "expired" || m.reason == "revoked" || m.detail == "not_yet_valid":
				want = IntegrityVerified
			case m.detail == "bundle_missing" || m.detail == "object_missing":
				want = IntegrityIncomplete
			}
			if res.Integrity != want {
				t.Errorf("integrity %s, want %s", res.Integrity, want)
			}
		})
	}
}

// TestKMSProfile: an evidence root signed with the AWS-KMS P-256 profile
// verifies through the sigstore DSSE adapter (sha256(PAE), DER, low S), and
// a high-S twin of a signature is refused.
func TestKMSProfile(t *testing.T) {
	o := genOptions(t)
	o.KMS = true
	dir, r := generate(t, o)
	res := verifyGenerated(t, dir, r, "")
	if res.Integrity != IntegrityVerified || res.Product.Verdict != "production" {
		var b strings.Builder
		_ = res.WriteText(&b)
		t.Fatalf("KMS root:\n%s", b.String())
	}
	for name, f := range map[string]func(e *lg.Envelope){
		"high S": func(e *lg.Envelope) {
			var rs struct{ R, S *big.Int }
			_, _ = asn1.Unmarshal(e.Sigs[0].Sig, &rs)
			rs.S = new(big.Int).Sub(elliptic.P256().Params().N, rs.S)
			e.Sigs[0].Sig, _ = asn1.Marshal(rs)
		},
		"P1363 encoding": func(e *lg.Envelope) {
			var rs struct{ R, S *big.Int }
			_, _ = asn1.Unmarshal(e.Sigs[0].Sig, &rs)
			e.Sigs[0].Sig = append(rs.R.FillBytes(make([]byte, 32)), rs.S.FillBytes(make([]byte, 32))...)
		},
		"flipped": func(e *lg.Envelope) { e.Sigs[0].Sig[10] ^= 1 },
	} {
		t.Run(name, func(t *testing.T) {
			o := genOptions(t)
			o.KMS = true
			o.Hooks.Envelope = onEnvelope(kRel, 0, f)
			dir, r := generate(t, o)
			res := verifyGenerated(t, dir, r, relDoc)
			if d := deref(res.Targets[0].Detail); d != "signature_invalid" {
				t.Fatalf("agent: %q", d)
			}
		})
	}
}
