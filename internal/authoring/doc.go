// Package authoring is the Go side of a D4 authoring session: the [Session]
// that the Flow helper holds for the process lifetime, the refusal codes its
// tools answer with, and the closed, PHI-safe projections that are the only
// shapes an authoring result may take on any wire (MCP from `serve
// --authoring`, mailbox callbacks from `authoring connect`).
//
// Every projection is an allowlist built from validated values
// (mcp-surface.md §10.2, openadapt-types authoring-observe-v1): no values,
// text, titles, screenshots, OCR, URLs or pixels ever leave it, whatever the
// session returned. Stable: the projection shapes and [Code] values; the
// session plumbing may change with the helper protocol.
package authoring
