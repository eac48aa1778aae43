// Package flowrun drives Flow's `openadapt-flow run` as a child process and
// classifies its outcome (docs/runs.md).
// The agent never re-implements execution: every run is one Flow process.
//
// The pieces, in the order serve uses them:
//   - [SplitCommand] splits --flow-cli with POSIX shell quoting, and
//     [LookFlow] resolves the program (flow_not_found);
//   - [ChildEnv] builds the explicit child environment allowlist with the
//     --pass-env opt-ins;
//   - [Runner] / [CLIRunner] run one [Request]: the parameters file
//     (0600, exclusive), the exact argv ([Request.Args]), a new process
//     group (a kill-on-close job object on Windows) killed as a whole on
//     timeout or cancellation ([Exec]), bounded stdout/stderr tails, the
//     report read with path safety ([ReadReport]), and the classification
//     ([ClassifyExit]) into a [Result] with the public [Verdict] and
//     [Summary];
//   - [CheckReport] / [CheckReportObject] approximate Flow's own report
//     validation for the Needs Attention projector (internal/attention);
//   - [CertifyArgs] builds the certify argv for [Exec]; [TerminateOrphan]
//     and [SweepParamsFiles] serve the startup reconciliation.
//
// Stable API: everything exported here. Protected data (parameter values,
// report bodies, Flow output, paths) is kept in the protected fields of
// [Result] and never appears in error text except as wrapped OS errors
// (which may hold paths; treat every error as protected detail).
package flowrun
