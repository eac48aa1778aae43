// Package buildinfo reports the version of the running binary.
//
// Release builds set [version] with
//
//	-ldflags "-X github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo.version=v1.2.3"
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

// VCSInfo is what the Go toolchain stamped about the source tree: the
// revision, its commit time and whether the tree had local changes. The
// zero value means the build recorded none (go test, -buildvcs=false, or a
// build outside a repository).
type VCSInfo struct {
	Revision string `json:"revision"`
	Time     string `json:"time"`
	Modified bool   `json:"modified"`
}

// VCS returns the VCS stamp of this build, or nil when it has none.
func VCS() *VCSInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return vcsFrom(bi)
}

func vcsFrom(bi *debug.BuildInfo) *VCSInfo {
	var v VCSInfo
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	if v.Revision == "" {
		return nil
	}
	return &v
}
