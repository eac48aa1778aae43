// Package skill emits, validates, packs, verifies and installs Agent Skills
// that wrap the skill folders openadapt-flow emits (docs/skills.md).
//
// A Flow skill folder is SKILL.md plus bundle/. [Emit] verifies the bundle
// with the bundle package, then [Wrap]s SKILL.md: safe double-quoted
// frontmatter with openadapt-* metadata, Flow's body byte for byte, and an
// appendix rendered from the templates package that tells an agent how to use
// the workflow through `openadapt-agent serve`. [Validate] applies the Agent
// Skills rules (the stricter of the two reference validators) and returns
// [Finding]s; [ParseSkillFile] is the parser every verb shares. [Pack] and
// [PackFile] write reproducible .skill/.zip and .tar.zst archives with a
// SHA256SUMS manifest and an h1: [TreeDigest]; [VerifyArchive] checks one
// without writing anything, under [Limits]; [Install] puts a skill where
// agents read it and records it in the skills lock file.
//
// Errors form a sentinel tree tested with errors.Is: [ErrInvalid] wraps
// [ErrFrontmatter], [ErrName], [ErrDescription] and [ErrLayout]; alongside
// are [ErrUnsafeArchive] (its message names the limit or rule hit),
// [ErrDigestMismatch], [ErrConflict] and [ErrBundle] (which also wraps the
// bundle package's typed error). [ErrPath], [ErrOption] and [ErrUsage] mark
// input and usage errors.
//
// Protected data: a Flow skill holds recorded example values, step intents
// and the workflow name. Nothing this package adds (frontmatter metadata,
// appendix), returns ([EmitResult], [VerifyResult], [InstallResult]) or puts
// in an error or warning repeats any of it; the skill name, parameter names,
// opaque ids, digests, counts and paths the caller gave are the only values
// shown.
//
// Stable: the exported API. The archive bytes are pinned by golden hashes
// and depend on klauspost/compress v1.18.6 (zstd) and Go's compress/flate
// (zip).
package skill
