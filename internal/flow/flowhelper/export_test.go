package flowhelper

import "testing"

// SetSemWaitHook sets the in-flight-limit hook for t's duration.
func SetSemWaitHook(t *testing.T, f func(op string, fields any)) {
	testOnlySemWaitHook = f
	t.Cleanup(func() { testOnlySemWaitHook = nil })
}
