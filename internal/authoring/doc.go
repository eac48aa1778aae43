// Package authoring is the Go side of an authoring session
// (docs/authoring.md): the [Session] that the Flow helper holds for the
// process lifetime ([Open] starts one), the refusal codes its tools answer
// with, and the closed, PHI-safe projections that are the only shapes an
// authoring result may take on any wire (MCP from `serve --authoring`,
// mailbox callbacks from `authoring connect` through the mailbox
// subpackage).
//
// Every projection is an allowlist built from validated values
// (docs/authoring.md, "Projections"; openadapt-types authoring-observe-v1):
// no values, text, titles, screenshots, OCR, URLs or pixels ever leave it,
// whatever the session returned. Stable: the projection shapes and [Code]
// values; the session plumbing may change with the helper protocol.
package authoring
