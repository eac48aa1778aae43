// Package ledger verifies OpenAdapt's signed admission ledgers offline
// (docs/ledger.md): the evidence registry and its hash chain, object
// references and content addressing, the pinned signer registry, the
// trust-state receipts, DSSE/PAE Ed25519 (or KMS P-256) signature bundles
// verified through sigstore's DSSE verifier adapter with the registry key id,
// time windows, revocation, and "latest admission, never fall back".
//
// # Entry points
//
//   - [NewVerifier] with [DefaultTrust] and validated [Option]s, then
//     [Verifier.Verify] for `ledger verify`: per-target verdicts, the product
//     verdict and the workflow admissions, as a [Result] whose JSON form has
//     [MediaType].
//   - [CheckWorkflowAdmission] for serve's admission gate: is there an active
//     workflow admission for this exact bundle_sha256 at T? [Verifier.Gate]
//     and [Verifier.Admission] take a full [GateQuery] (profile, label,
//     bundle verification failure).
//   - [VerifyArtifact] verifies an ordinary Sigstore bundle (keyless with a
//     Fulcio identity, Rekor and RFC 3161 timestamps, or by key) over an
//     artifact's bytes or digest, offline against a local trusted root.
//   - [Embedded] is the dated snapshot of OpenAdapt's published ledgers
//     ([SnapshotDate]) compiled into the binary; [Path] is a ledger file or an
//     evidence-root directory.
//
// # Stability
//
// Verdicts are values, never errors: every input yields an active or
// not_active verdict with a reason (missing, expired, revoked, mismatched,
// unverifiable) and a stable snake_case detail (docs/ledger.md, Verdicts). Errors are
// reserved for unreadable or unrecognised input (wrapping [ErrInput]) and
// invalid options ([ErrOption]). JSON field names of [Result] are stable:
// fields are only added.
package ledger
