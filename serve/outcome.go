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
// key (docs/runs.md "Messages"). Refused, timed-out and interrupted runs
// carry no execution outcome, effect, transaction outcome or summary; a
// refused one carries the checks Flow named.
func outcomeOf(res flowrun.Result) runstore.Outcome {
	o := runstore.Outcome{Status: res.Status, ExecutionOutcome: res.Outcome, EffectVerified: res.EffectVerified,
		Summary: res.Summary, TransactionOutcome: res.TransactionOutcome}
	switch res.Status {
	case flowrun.StatusSuccess:
		o.MessageKey = keySuccess
	case flowrun.StatusHalt:
		switch {
		case res.Reason == flowrun.ReasonNoReport:
			o.MessageKey = keyHaltNoReport
		case res.Outcome == flowrun.OutcomeHalted && res.TransactionOutcome == flowrun.TxHaltedBeforeEffect:
			o.MessageKey = keyHaltBeforeEffect
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
		checks := res.FailedChecks
		if len(checks) == 0 {
			checks = []flowrun.FailedCheck{flowrun.CheckOther}
		}
		return runstore.Outcome{Status: res.Status, MessageKey: keyRefused, FailedChecks: checks}
	case flowrun.StatusTimeout:
		return runstore.Outcome{Status: res.Status, MessageKey: keyTimeout}
	case flowrun.StatusInterrupted:
		return interrupted
	default:
		o.Status = flowrun.StatusError
		switch {
		case res.Reason == flowrun.ReasonUnsignedProductionSuccess:
			o.MessageKey = keyUnsignedProductionSuccess
		case res.Process == (flowrun.Process{}) && res.ExitCode == nil:
			// Flow's process was never created (the parameters file or the
			// spawn failed): provably nothing ran.
			o.MessageKey = keyNotStarted
			o.EffectVerified = false
		default:
			o.MessageKey = keyError
			o.EffectVerified = false
		}
	}
	return o
}
