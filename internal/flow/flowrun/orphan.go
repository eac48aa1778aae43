package flowrun

import (
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/procgroup"
)

// TerminateOrphan terminates the process group of a run left behind by a
// dead server, from its recorded leader PID/PGID and
// start time: [procgroup.TerminateOrphan], Linux only.
func TerminateOrphan(p Process, grace time.Duration) bool {
	return procgroup.TerminateOrphan(p.PGID, p.StartTime, grace)
}
