package flowrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// DefaultFlowCommand is the Flow command when the operator gives none.
const DefaultFlowCommand = "openadapt-flow"

// ErrFlowNotFound is wrapped by [LookFlow] when the Flow command cannot be
// resolved (the serve failure envelope flow_not_found).
var ErrFlowNotFound = errors.New("flow command not found")

// LookFlow resolves the first word of a Flow command the way the child is
// started: a name without a slash is looked up in the server's PATH, a path
// must name an executable file. It returns the resolved program path, or an
// error wrapping [ErrFlowNotFound] (and [ErrEmptyCommand] for no words).
func LookFlow(flow []string) (string, error) {
	if len(flow) == 0 || flow[0] == "" {
		return "", fmt.Errorf("%w: %w", ErrFlowNotFound, ErrEmptyCommand)
	}
	p, err := exec.LookPath(flow[0])
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrFlowNotFound, err)
	}
	return p, nil
}

// maxHaltJSON bounds the protected halt object copied into a [Result]
// (the report's halt object, or null when its JSON exceeds 64 KiB).
const maxHaltJSON = 64 << 10

// Request is one governed run. Paths must be absolute.
type Request struct {
	// Flow is the Flow command words: [SplitCommand] of --flow-cli, or
	// {[DefaultFlowCommand]}. Flow[0] may be pre-resolved with [LookFlow].
	Flow []string
	// BundleDir is the bundle to run.
	BundleDir string
	// RunsDir is the runs root; Flow creates RunsDir/RunID.
	RunsDir string
	// RunID satisfies [ValidRunID].
	RunID string
	// ParamsDir holds the parameters file: <runs-dir>/.openadapt-agent/tmp.
	ParamsDir string
	// Params maps declared parameter names to string values. They go to the
	// 0600 parameters file only.
	Params map[string]string
	// URL, Config and Policy add --url, --config and --policy when non-empty.
	URL, Config, Policy string
	// ExtraArgs are appended verbatim.
	ExtraArgs []string
	// Env is the complete child environment ([ChildEnv]); nil is empty.
	Env []string
	// Dir is the working directory; "" inherits the server's.
	Dir string
	// Timeout, TimeoutGrace and CancelGrace are as in [Command].
	Timeout, TimeoutGrace, CancelGrace time.Duration
	// Started, if set, is called once right after the spawn.
	Started func(Process)
}

// Args returns the exact argv of a run (docs/runs.md, "The command line"),
// without resolving Flow[0]:
//
//	<flow…> run <bundle_dir> --run-dir <runs_dir>/<run_id> --params-file <params_file>
//	    [--url <url>] [--config <yaml>] [--policy <p>] [<extra>…]
//
// Parameter values never appear in it.
func (r Request) Args(paramsFile string) []string {
	args := make([]string, 0, len(r.Flow)+12+len(r.ExtraArgs))
	args = append(args, r.Flow...)
	args = append(args, "run", r.BundleDir,
		"--run-dir", r.RunDir(),
		"--params-file", paramsFile)
	if r.URL != "" {
		args = append(args, "--url", r.URL)
	}
	if r.Config != "" {
		args = append(args, "--config", r.Config)
	}
	if r.Policy != "" {
		args = append(args, "--policy", r.Policy)
	}
	return append(args, r.ExtraArgs...)
}

// RunDir is RunsDir/RunID.
func (r Request) RunDir() string { return filepath.Join(r.RunsDir, r.RunID) }

func (r Request) validate() error {
	switch {
	case len(r.Flow) == 0 || r.Flow[0] == "":
		return fmt.Errorf("%w: no flow command", ErrInvalidRequest)
	case !ValidRunID(r.RunID):
		return fmt.Errorf("%w: malformed run id", ErrInvalidRequest)
	case !filepath.IsAbs(r.BundleDir):
		return fmt.Errorf("%w: bundle directory is not absolute", ErrInvalidRequest)
	case !filepath.IsAbs(r.RunsDir):
		return fmt.Errorf("%w: runs directory is not absolute", ErrInvalidRequest)
	case !filepath.IsAbs(r.ParamsDir):
		return fmt.Errorf("%w: parameters directory is not absolute", ErrInvalidRequest)
	}
	return nil
}

// CertifyArgs returns the certify argv (policy before
// config): <flow…> certify <bundle_dir> [--policy <p>] [--config <yaml>].
func CertifyArgs(flow []string, bundleDir, policy, config string) []string {
	args := append(append([]string{}, flow...), "certify", bundleDir)
	if policy != "" {
		args = append(args, "--policy", policy)
	}
	if config != "" {
		args = append(args, "--config", config)
	}
	return args
}

// Result is the terminal result of a run. Status, Outcome, Reason,
// EffectVerified and Summary are public; everything else is protected detail
// that stays on the machine unless protected export is on.
type Result struct {
	Verdict
	// Summary is set only when a report was classified (never for refused,
	// timeout, interrupted, an unusable or a missing report).
	Summary Summary
	// TransactionOutcome is the report's transaction_outcome when it is one
	// of [TransactionOutcomes] and the report was classified (never for
	// refused, timeout, interrupted, an unusable or a missing report); ""
	// otherwise.
	TransactionOutcome string
	// FailedChecks are the closed codes of the checks a governed refusal
	// (status refused) named on Flow's stdout, at least one
	// ([CheckScanner]); nil for every other status.
	FailedChecks []FailedCheck
	// ExitCode is Flow's exit code when it exited by itself (negative: killed
	// by that signal), nil otherwise.
	ExitCode *int
	// Report says what was found at RunDir/report.json; it is
	// [ReportAbsent] when the report was not read (timeout, interrupted,
	// exit 2, spawn failure).
	Report ReportState
	// RunDir is RunsDir/RunID; ReportPath is RunDir/report.json when a
	// report file was read or found unusable, "" otherwise.
	RunDir, ReportPath string
	// Halt is the report's halt object when it is a JSON object of at most
	// 64 KiB, else nil. Protected.
	Halt json.RawMessage
	// StdoutTail and StderrTail are the last [TailChars] characters of
	// Flow's output. Protected.
	StdoutTail, StderrTail string
	// StderrKept is the last [StderrKeepBytes] bytes of Flow's stderr, for
	// the local operator only (serve keeps it in <state>/runs/<id>.stderr,
	// which no MCP projection reads). Protected.
	StderrKept []byte
	// Process is the started child (zero when nothing started).
	Process Process
	// Err is the protected cause of a runner-made error status: the params
	// file or the spawn failed, or the report was unusable. Never on the wire.
	Err error
	// Started and Ended bracket the child process.
	Started, Ended time.Time
}

// Runner runs one governed Flow run to its terminal state. serve depends on
// this interface so tests can substitute a fake; [CLIRunner] is the real one.
//
// Run never returns a status outside success, halt, refused, timeout, error
// and interrupted, and never panics on any Flow behaviour. ctx is the run's
// lifetime, not a request's: cancel it only to stop the run (server
// shutdown), which gives status interrupted.
type Runner interface {
	Run(ctx context.Context, req Request) Result
}

// CLIRunner runs `openadapt-flow run` as a child process.
// The zero value is ready to use.
type CLIRunner struct{}

var _ Runner = CLIRunner{}

// Run executes req:
//  1. write the parameters file (0600, exclusive) in req.ParamsDir;
//  2. start Flow with [Request.Args] in a new process group, empty stdin
//     and req.Env, and wait ([Exec]);
//  3. remove the parameters file, whatever happened;
//  4. timeout → status timeout, ctx done → interrupted (no report is read
//     after a kill); otherwise read the report with [ReadReport] and
//     classify with [ClassifyExit].
//
// A request that fails validation, a params file that cannot be written and
// a spawn failure give status error with Err set.
func (CLIRunner) Run(ctx context.Context, req Request) Result {
	res := Result{RunDir: ""}
	if err := req.validate(); err != nil {
		res.Verdict = Verdict{Status: StatusError}
		res.Err = err
		return res
	}
	res.RunDir = req.RunDir()
	paramsFile, err := writeParamsFile(req.ParamsDir, req.RunID, req.Params)
	if err != nil {
		res.Verdict = Verdict{Status: StatusError}
		res.Err = err
		return res
	}
	var checks CheckScanner
	ex := Exec(ctx, Command{
		Args:         req.Args(paramsFile),
		Stdout:       &checks,
		Env:          req.Env,
		Dir:          req.Dir,
		Timeout:      req.Timeout,
		TimeoutGrace: req.TimeoutGrace,
		CancelGrace:  req.CancelGrace,
		Started:      req.Started,
	})
	// "delete it after the child has exited or been killed, whatever
	// happened"; a failure here is not the run's outcome.
	_ = RemoveParamsFile(paramsFile)
	res.Process = ex.Process
	res.StdoutTail, res.StderrTail = ex.Stdout, ex.Stderr
	res.StderrKept = ex.StderrKept
	res.Started, res.Ended = ex.Started, ex.Ended
	switch {
	case ex.TimedOut:
		res.Verdict = Verdict{Status: StatusTimeout}
		return res
	case ex.Canceled:
		res.Verdict = Verdict{Status: StatusInterrupted}
		res.Err = ex.Err
		return res
	case ex.Err != nil:
		res.Verdict = Verdict{Status: StatusError}
		res.Err = ex.Err
		return res
	}
	code := ex.Code
	res.ExitCode = &code
	if code == 2 {
		// Refused: the report, if any, is ignored; what Flow printed names
		// the checks that refused.
		res.Verdict = Verdict{Status: StatusRefused}
		res.FailedChecks = checks.Checks()
		return res
	}
	// The report is parsed once; classification, summary and halt use the
	// same object.
	_, doc, state, rerr := readReport(req.RunsDir, req.RunID)
	res.Report = state
	if state != ReportAbsent {
		res.ReportPath = filepath.Join(res.RunDir, "report.json")
	}
	switch state {
	case ReportUnusable:
		res.Verdict = ClassifyExit(code, state, nil)
		res.Err = rerr
	case ReportAbsent:
		res.Verdict = ClassifyExit(code, state, nil)
	case ReportPresent:
		res.Verdict = classifyExitObject(code, doc)
		res.Summary = summarizeObject(doc)
		res.Halt = haltObject(doc)
		res.TransactionOutcome = transactionOutcome(doc)
	}
	return res
}

// The transaction outcomes Flow's report may name (its
// transaction_outcome, docs/runs.md "Decision fields").
const (
	TxVerified               = "VERIFIED"
	TxHaltedBeforeEffect     = "HALTED_BEFORE_EFFECT"
	TxReconciliationRequired = "RECONCILIATION_REQUIRED"
	TxFailedPlatform         = "FAILED_PLATFORM"
	TxCanceled               = "CANCELED"
	TxRejectedPolicy         = "REJECTED_POLICY"
	TxCompletedUnverified    = "COMPLETED_UNVERIFIED"
	TxRolledBack             = "ROLLED_BACK"
)

// TransactionOutcomes are the values [Result.TransactionOutcome] may take.
var TransactionOutcomes = []string{
	TxVerified, TxHaltedBeforeEffect, TxReconciliationRequired, TxFailedPlatform,
	TxCanceled, TxRejectedPolicy, TxCompletedUnverified, TxRolledBack,
}

// transactionOutcome is the report's transaction_outcome when it is a string
// naming one of [TransactionOutcomes], else "" (absent, null, another type
// or an unknown value all mean unknown).
func transactionOutcome(d *pyjson.Doc) string {
	v := d.Get(d.Root(), "transaction_outcome")
	if !isString(d, v) {
		return ""
	}
	s := d.Str(v)
	for _, t := range TransactionOutcomes {
		if s == t {
			return t
		}
	}
	return ""
}

// haltObject returns the report's halt member when it is an object of at
// most 64 KiB: its source bytes in report.json, exactly as Flow wrote them.
func haltObject(d *pyjson.Doc) json.RawMessage {
	h := d.Get(d.Root(), "halt")
	if d.Kind(h) != pyjson.Object {
		return nil
	}
	raw := d.Raw(h)
	if len(raw) > maxHaltJSON {
		return nil
	}
	return raw[:len(raw):len(raw)]
}
