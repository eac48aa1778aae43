//go:build !unix

package fakehelper

import (
	"errors"
	"testing"
)

// Name is the fake's executable name.
const Name = "python3"

// RunIfInvoked does nothing: the fake helper speaks POSIX fds only.
func RunIfInvoked() {}

// Install skips the test: the fake helper is POSIX-only (attended actions
// are exercised on Linux only).
func Install(t testing.TB) string {
	t.Skip("fakehelper: POSIX only")
	return ""
}

// Main reports that the fake helper is POSIX-only.
func Main() int { return 2 }

// BuildShared reports that there is no fake helper to build here.
func BuildShared() (path string, cleanup func(), err error) {
	return "", func() {}, errors.New("fakehelper: POSIX only")
}
