package flowhelper_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	rf, err := locateRealFlow()
	if err != nil {
		fmt.Fprintf(os.Stderr, "flowhelper: OPENADAPT_REALFLOW_DIR is set but unusable: %v\n", err)
		os.Exit(1)
	}
	if rf == nil {
		fmt.Fprintln(os.Stderr, realFlowSkip)
	}
	theRealFlow = rf
	os.Exit(m.Run())
}

// attentionID is Flow's opaque id of a run dir relative to the runs root.
func attentionID(rel string) string {
	s := sha256.Sum256([]byte(rel))
	return hex.EncodeToString(s[:])[:24]
}
