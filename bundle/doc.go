// Package bundle reads and verifies openadapt-flow workflow bundles exactly as
// Flow 1.32.0 does (docs/bundle.md).
//
// [Discover] finds the bundles under a root (the root itself, or its
// immediate child folders) and [Load] loads one folder. Both verify at the
// [Full] level by default (content digest plus every listed asset; every
// template of a sealed bundle is decrypted) or, with [WithLevel]([Metadata]),
// only check the content digest ([ContentVerified]); a run always requires
// [Full] ([Bundle.Verified]). Loading is fail-soft: a bad bundle is returned
// with Integrity [Failed] and a typed error, one sentinel per [ErrorKind]
// ([ErrContentDigestMismatch], [ErrUnsafePath], …), tested with errors.Is.
// Every symlink is refused and never followed.
//
// The default metadata of a [Bundle] (opaque [Bundle.ID], digest,
// bundle_version, counts, Flow's canonical parameter schema [Param], schema
// version, provenance) holds no protected data; display names, step intents
// and recorded values are reachable only through [Bundle.Protected]. Error
// texts describe structure and never carry protected values, the passphrase
// or absolute paths.
//
// [CanonicalJSON] is Flow's canonical JSON (Python json.dumps with sorted keys,
// compact separators, raw UTF-8 and float repr); [DecryptContainer] opens one
// Flow sealed container with the AAD of its file kind.
//
// Stable: the exported API. Internals (the JSON tree, omission walker, worker
// pool) may change.
package bundle
