package flowhelper_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/realflow"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

func TestMain(m *testing.M) {
	rf, err := realflow.Locate(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "flowhelper: %v\n", err)
		os.Exit(1)
	}
	if rf == nil {
		fmt.Fprintln(os.Stderr, realFlowSkip)
	}
	theRealFlow = rf
	// Most tests wait on helper processes: run eight at once, each fake
	// helper a non-race build (fakehelper.Install falls back to the test
	// binary when it did not build).
	testutil.Parallel(8)
	_, cleanup, err := fakehelper.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "flowhelper tests: the shared fake helper did not build; each test installs its own:", err)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// attentionID is Flow's opaque id of a run dir relative to the runs root.
func attentionID(rel string) string {
	s := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(s[:])[:24]
}
