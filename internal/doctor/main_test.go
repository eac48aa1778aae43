package doctor

import (
	"os"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

func TestMain(m *testing.M) {
	fakehelper.RunIfInvoked()
	os.Exit(m.Run())
}
