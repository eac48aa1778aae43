// Package buildinfo reports the version of the running binary.
//
// Release builds set [version] with
//
//	-ldflags "-X github.com/OpenAdaptAI/openadapt-agent/internal/buildinfo.version=v1.2.3"
//
// Other builds fall back to the module version recorded by the Go toolchain
// (for example by `go install …@v1.2.3`), and finally to "devel".
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// version is set by the linker for release builds. Keep it a plain string
// variable: -X only works on those.
var version string

var fallback = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "devel"
})

// Version returns the version of this binary: the ldflags value when set,
// else the main module version from the build info, else "devel".
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
