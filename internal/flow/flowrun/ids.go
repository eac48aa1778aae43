package flowrun

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

var runIDPattern = lazyre.New(`^run-[0-9a-f]{24}$`)

// NewRunID returns a fresh run id: "run-" + 24 lowercase hex characters from
// 12 bytes of crypto/rand.
func NewRunID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "run-" + hex.EncodeToString(b[:])
}

// ValidRunID reports whether s matches ^run-[0-9a-f]{24}$. It is decided from
// the string alone, so it never touches the filesystem.
func ValidRunID(s string) bool { return runIDPattern().MatchString(s) }
