package serve

import (
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// interrupted is the outcome of a run the server stopped: at shutdown, when
// a run is reserved during shutdown, and for a dead owner's run found at
// startup (docs/runs.md "Long runs and interruption").
var interrupted = runstore.Outcome{Status: flowrun.StatusInterrupted, MessageKey: keyInterrupted}

// outcomeOf classifies a flowrun result into its public outcome and message
// key (docs/runs.md "Messages"). Refused, timed-out and interrupted runs carry no
// execution outcome, effect or summary.
func outcomeOf(res flowrun.Result) runstore.Outcome {
	o := runstore.Outcome{Status: res.Status, ExecutionOutcome: res.Outcome, EffectVerified: res.EffectVerified, Summary: res.Summary}
	switch res.Status {
	case flowrun.StatusSuccess:
		o.MessageKey = keySuccess
	case flowrun.StatusHalt:
		switch {
		case res.Reason == flowrun.ReasonNoReport:
			o.MessageKey = keyHaltNoReport
		case res.Outcome == flowrun.OutcomeHalted:
			o.MessageKey = keyHaltHalted
		case res.Outcome == flowrun.OutcomeCompletedUnverified:
			o.MessageKey = keyHaltCompletedUnverified
		case res.Outcome == flowrun.OutcomeRolledBack:
			o.MessageKey = keyHaltRolledBack
		default:
			o.MessageKey = keyHalt
		}
	case flowrun.StatusRefused:
		return runstore.Outcome{Status: res.Status, MessageKey: keyRefused}
	case flowrun.StatusTimeout:
		return runstore.Outcome{Status: res.Status, MessageKey: keyTimeout}
	case flowrun.StatusInterrupted:
		return interrupted
	default:
		o.Status = flowrun.StatusError
		if res.Reason == flowrun.ReasonUnsignedProductionSuccess {
			o.MessageKey = keyUnsignedProductionSuccess
		} else {
			o.MessageKey = keyError
			o.EffectVerified = false
		}
	}
	return o
}
