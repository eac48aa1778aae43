package doctor

import (
	"fmt"
	"os"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

// TestMain builds the fake helper once without the race detector
// (fakehelper.BuildShared): otherwise every fake helper start re-executes
// the race-built test binary, which starts slowly and sleeps 1 s at exit
// (the race detector's atexit_sleep_ms). Install falls back to the test
// binary when the build fails, so RunIfInvoked stays.
func TestMain(m *testing.M) {
	fakehelper.RunIfInvoked()
	_, cleanup, err := fakehelper.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "doctor tests: the shared fake helper did not build; each test uses the test binary:", err)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}
