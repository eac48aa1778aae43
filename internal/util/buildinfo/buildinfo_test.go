package buildinfo

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"
)

func TestVersionPrefersLdflags(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })

	version = ""
	if got := Version(); got == "" {
		t.Fatal("Version() is empty without ldflags; want the build-info fallback")
	}
	version = "v9.9.9-test"
	if got := Version(); got != "v9.9.9-test" {
		t.Fatalf("Version() = %q, want the ldflags value %q", got, "v9.9.9-test")
	}
}

// semver is the shape the VERSION file must have: MAJOR.MINOR.PATCH with an
// optional pre-release, and no leading "v" (goreleaser's {{.Version}} and the
// MCP registry both use the bare form).
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

func TestFileIsSemver(t *testing.T) {
	if got := File(); !semver.MatchString(got) {
		t.Fatalf("VERSION = %q, want MAJOR.MINOR.PATCH without a leading v", got)
	}
}

func TestFallbackIsFile(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = ""
	// Test binaries have no main module version, so the fallback is VERSION.
	if got := Version(); got != File() {
		t.Fatalf("Version() without ldflags = %q, want the VERSION file %q", got, File())
	}
}

// TestReleaseTag is run by goreleaser's before hook with the tag being
// released: a release whose tag differs from VERSION stops there.
func TestReleaseTag(t *testing.T) {
	tag := os.Getenv("OPENADAPT_RELEASE_TAG")
	if tag == "" {
		t.Skip("OPENADAPT_RELEASE_TAG is not set (only release builds set it)")
	}
	if want := "v" + File(); tag != want {
		t.Fatalf("release tag %q does not match VERSION (want %q); bump internal/util/buildinfo/VERSION, server.json and manifest.json together", tag, want)
	}
}

func TestVCSFrom(t *testing.T) {
	if got := vcsFrom(&debug.BuildInfo{}); got != nil {
		t.Fatalf("no settings: got %+v, want nil", got)
	}
	bi := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-12-01T21:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := vcsFrom(bi)
	if got == nil || got.Revision != "0123456789abcdef0123456789abcdef01234567" || got.Time != "2026-12-01T21:00:00Z" || !got.Modified {
		t.Fatalf("vcsFrom = %+v", got)
	}
}
