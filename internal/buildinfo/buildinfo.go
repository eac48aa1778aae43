// Package buildinfo reports the version of the running binary.
//
// Release builds set [version] with
//
//	-ldflags "-X github.com/OpenAdaptAI/openadapt-agent/internal/buildinfo.version=v1.2.3"
//
// Other builds fall back to the module version recorded by the Go toolchain
// (for example by `go install …@v1.2.3`), and finally to the embedded VERSION
// file.
//
// VERSION is the project's one source of truth for the release version:
// server.json (MCP registry), manifest.json (MCPB) and the release tag must
// all equal it, which tests in cmd enforce.
package buildinfo

import (
	_ "embed"
	"runtime/debug"
	"strings"
	"sync"
)

// file holds the bytes of the VERSION file next to this package.
//
//go:embed VERSION
var file string

// File returns the release version recorded in the VERSION file, for example
// "0.1.0". It is what server.json, manifest.json and the release tag carry.
func File() string { return strings.TrimSpace(file) }

// version is set by the linker for release builds. Keep it a plain string
// variable: -X only works on those.
var version string

var fallback = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return File()
})

// Version returns the version of this binary: the ldflags value when set,
// else the main module version from the build info, else [File].
func Version() string {
	if version != "" {
		return version
	}
	return fallback()
}

// GoVersion returns the Go toolchain version the binary was built with.
func GoVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.GoVersion
	}
	return "unknown"
}
