package buildinfo

import "testing"

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
