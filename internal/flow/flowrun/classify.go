package flowrun

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Status is a run status (docs/runs.md, "Run status"). The terminal statuses are
// success, halt, refused, timeout, error and interrupted; "running" belongs to
// the server's run manager and is never produced by this package.
type Status string

// The terminal statuses.
const (
	StatusSuccess     Status = "success"
	StatusHalt        Status = "halt"
	StatusRefused     Status = "refused"
	StatusTimeout     Status = "timeout"
	StatusError       Status = "error"
	StatusInterrupted Status = "interrupted"
)

// Reason refines a status for message selection. The classifier exposes
// three: unsigned_production_success, inconsistent_exit and no_report; every
// other verdict has the empty reason.
type Reason string

// The reasons (docs/runs.md, "Report status" and "Run status").
const (
	// ReasonUnsignedProductionSuccess: a production-eligible VERIFIED report at
	// Flow exit 0. Status error, outcome VERIFIED, EffectVerified true.
	ReasonUnsignedProductionSuccess Reason = "unsigned_production_success"
	// ReasonInconsistentExit: Flow exited neither 0 nor 2 but its report
	// classifies as success. Status error with the generic copy.
	ReasonInconsistentExit Reason = "inconsistent_exit"
	// ReasonNoReport: Flow exited neither 0 nor 2 and wrote no report. Status
	// halt; the live effect is uncertain.
	ReasonNoReport Reason = "no_report"
)

// The five precise execution outcomes of Flow's report.
const (
	OutcomeVerified            = "VERIFIED"
	OutcomeCompletedUnverified = "COMPLETED_UNVERIFIED"
	OutcomeHalted              = "HALTED"
	OutcomeFailed              = "FAILED"
	OutcomeRolledBack          = "ROLLED_BACK"
)

// Verdict is a classification: the public status, the precise outcome when
// the report carried a valid one (rules 4–14 of the report table in
// docs/runs.md, "Report status"; "" otherwise), the reason, and
// EffectVerified, which is true exactly when Reason is
// [ReasonUnsignedProductionSuccess]: the effect happened, only the Seal is
// missing.
type Verdict struct {
	Status         Status
	Outcome        string
	Reason         Reason
	EffectVerified bool
}

// ReportState says what [ReadReport] found at <run_dir>/report.json.
type ReportState int

const (
	// ReportAbsent: the run directory or report.json does not exist.
	ReportAbsent ReportState = iota
	// ReportUnusable: report.json exists but is a symlink or other
	// non-regular file, lies outside the runs root, exceeds [MaxReportSize],
	// cannot be read, is not valid JSON or is not a JSON object.
	ReportUnusable
	// ReportPresent: report.json was read and is a JSON object.
	ReportPresent
)

// String returns absent, unusable or present.
func (s ReportState) String() string {
	switch s {
	case ReportAbsent:
		return "absent"
	case ReportUnusable:
		return "unusable"
	case ReportPresent:
		return "present"
	}
	return fmt.Sprintf("ReportState(%d)", int(s))
}

// reportClass is the report table's result before the unsigned-production
// rule is applied.
type reportClass struct {
	status Status
	// outcome is P when rules 4–14 decided ("" for rules 1–3).
	outcome string
	// inconsistent is true when the error comes from a consistency rule
	// (1, 2-with-non-boolean, 3–12), i.e. Flow's validator would reject it.
	inconsistent bool
	// productionEligible: production_eligible is exactly true.
	productionEligible bool
}

var validOutcomes = map[string]bool{
	OutcomeVerified: true, OutcomeCompletedUnverified: true, OutcomeHalted: true,
	OutcomeFailed: true, OutcomeRolledBack: true,
}

var validProfiles = map[string]bool{"demo": true, "standard": true, "regulated": true}

func isProduction(profile string) bool { return profile == "standard" || profile == "regulated" }

// flowJSON are the input rules for the JSON files Flow writes and reads back
// (report.json and the run files): pyjson's strict core — strict UTF-8, no
// lone surrogate escape, no duplicate key at any depth, CPython's nesting and
// integer-digit bounds, no byte order mark. This package only compares
// floats, never writes them, so a float is kept as its token. A file these
// rules refuse is treated exactly as one that is not JSON at all (fail
// closed: Flow's json.load would not give the same object, or any).
var flowJSON = pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits, Floats: pyjson.FloatRefuse}

// ParseObject parses data, one complete JSON document, under the strict
// rules above; the object is at d.Root(). ok is false (and d nil) for
// anything the rules refuse and for a top-level value that is not an
// object. d aliases data: its [pyjson.Doc.Raw] slices are data's bytes.
func ParseObject(data []byte) (d *pyjson.Doc, ok bool) {
	d = new(pyjson.Doc)
	if d.Parse(data, flowJSON) != nil || d.Kind(d.Root()) != pyjson.Object {
		return nil, false
	}
	return d, true
}

// present reports whether v is a member value other than null.
func present(d *pyjson.Doc, v pyjson.V) bool { return !d.IsNull(v) }

// isBool reports whether v is exactly a JSON boolean.
func isBool(d *pyjson.Doc, v pyjson.V) bool { return d.Kind(v) == pyjson.Bool }

// isString reports whether v is a JSON string.
func isString(d *pyjson.Doc, v pyjson.V) bool { return d.Kind(v) == pyjson.String }

// nonNegInt returns the value of v when it is an integer literal (no '.',
// 'e' or 'E'; never a boolean or a string) that is non-negative and fits
// an int64.
func nonNegInt(d *pyjson.Doc, v pyjson.V) (int64, bool) {
	if !d.IsInt(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d.Bytes(v)), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// classifyObject applies the report table (docs/runs.md, "Report status"), top-down,
// to the report object at d's root.
func classifyObject(d *pyjson.Doc) reportClass {
	r := d.Root()
	errc := func(outcome string) reportClass {
		return reportClass{status: StatusError, outcome: outcome, inconsistent: true}
	}
	successV := d.Get(r, "success")
	// Rule 2: P absent or null.
	pV := d.Get(r, "execution_outcome")
	if d.IsNull(pV) {
		switch {
		case d.True(successV):
			return reportClass{status: StatusSuccess}
		case d.False(successV):
			return reportClass{status: StatusHalt}
		default:
			return errc("")
		}
	}
	// Rule 3: P is not one of the five strings.
	p := d.Str(pV)
	if !isString(d, pV) || !validOutcomes[p] {
		return errc("")
	}
	// Rule 4: success is not a JSON boolean.
	if !isBool(d, successV) {
		return errc(p)
	}
	success := d.True(successV)
	// Rule 5: execution_profile present, non-null, not demo/standard/regulated.
	profile := ""
	if v := d.Get(r, "execution_profile"); present(d, v) {
		if !isString(d, v) || !validProfiles[d.Str(v)] {
			return errc(p)
		}
		profile = d.Str(v)
	}
	// Rule 6: production_eligible present, non-null and not a boolean.
	prodEligible := false
	if v := d.Get(r, "production_eligible"); present(d, v) {
		if !isBool(d, v) {
			return errc(p)
		}
		prodEligible = d.True(v)
	}
	// Rule 7: production_eligible true and (P ≠ VERIFIED or profile not
	// standard/regulated).
	if prodEligible && (p != OutcomeVerified || !isProduction(profile)) {
		return errc(p)
	}
	// Rule 8: outcome_envelope present and (not an object, or its outcome ≠ P).
	if env := d.Get(r, "outcome_envelope"); present(d, env) {
		if d.Kind(env) != pyjson.Object || !d.StrIs(d.Get(env, "outcome"), p) {
			return errc(p)
		}
		// Rule 9: a report key the envelope also carries differs from it.
		for _, k := range [][2]string{
			{"execution_profile", "profile"},
			{"production_eligible", "production_eligible"},
			{"execution_completed", "execution_completed"},
			{"model_calls", "model_calls"},
			{"external_network_calls", "external_network_calls"},
		} {
			rv := d.Get(r, k[0])
			if rv == pyjson.None {
				continue
			}
			if !memberEqual(d, rv, d.Get(env, k[1])) {
				return errc(p)
			}
		}
	}
	// Rule 10: VERIFIED needs a standard/regulated profile.
	if p == OutcomeVerified && !isProduction(profile) {
		return errc(p)
	}
	// Rule 11: VERIFIED with success true is success (then the
	// unsigned-production rule), else error.
	if p == OutcomeVerified {
		if success {
			return reportClass{status: StatusSuccess, outcome: p, productionEligible: prodEligible}
		}
		return errc(p)
	}
	// Rule 12: HALTED, FAILED or ROLLED_BACK with success true.
	if success && (p == OutcomeHalted || p == OutcomeFailed || p == OutcomeRolledBack) {
		return errc(p)
	}
	// Rule 13: FAILED is error by definition (not an inconsistency).
	if p == OutcomeFailed {
		return reportClass{status: StatusError, outcome: p}
	}
	// Rule 14: HALTED, ROLLED_BACK, COMPLETED_UNVERIFIED.
	return reportClass{status: StatusHalt, outcome: p}
}

// classifyBytes applies rule 1 then classifyObject.
func classifyBytes(report []byte) reportClass {
	d, ok := ParseObject(report)
	if !ok {
		return reportClass{status: StatusError, inconsistent: true}
	}
	return classifyObject(d)
}

// classifyReport classifies a report.json body on its own, as at Flow exit 0:
// the report table (rules 1–14) followed by the unsigned-production rule, so a production-eligible
// VERIFIED report gives status error with [ReasonUnsignedProductionSuccess]
// and EffectVerified. Invalid JSON and non-objects are error (rule 1).
// JSON booleans only: "yes" is not true.
func classifyReport(report []byte) Verdict { return applyUnsigned(classifyBytes(report)) }

// applyUnsigned turns a report class into the exit-0 verdict: a local
// server cannot mint a Seal, so a production-eligible VERIFIED run is never
// reported as success.
func applyUnsigned(c reportClass) Verdict {
	v := Verdict{Status: c.status, Outcome: c.outcome}
	if c.status == StatusSuccess && c.productionEligible {
		v.Status = StatusError
		v.Reason = ReasonUnsignedProductionSuccess
		v.EffectVerified = true
	}
	return v
}

// ClassifyExit is the run status (docs/runs.md, "Run status") of a Flow process that
// exited by itself with code (a negative code means death by that signal, as
// in Python). state and report come from [ReadReport]; report is ignored
// unless state is [ReportPresent]. Timeout, interruption and launch failure
// are decided by the runner before any report is read, so they are not
// inputs here.
//
//   - exit 2: refused, whatever the report;
//   - report unusable: error;
//   - exit 0: no report → error; otherwise classifyReport;
//   - other exits: no report → halt with [ReasonNoReport]; a report that
//     would be success → error with [ReasonInconsistentExit] (never the
//     unsigned copy, never EffectVerified); otherwise the report status.
func ClassifyExit(code int, state ReportState, report []byte) Verdict {
	if code == 2 {
		return Verdict{Status: StatusRefused}
	}
	switch state {
	case ReportUnusable:
		return Verdict{Status: StatusError}
	case ReportAbsent:
		if code == 0 {
			return Verdict{Status: StatusError}
		}
		return Verdict{Status: StatusHalt, Reason: ReasonNoReport}
	}
	d, ok := ParseObject(report)
	if !ok {
		// A caller passing ReportPresent with bytes that are not an object:
		// the report is unusable, not "no report".
		return Verdict{Status: StatusError}
	}
	return classifyExitObject(code, d)
}

// classifyExitObject is ClassifyExit for a present report already parsed.
func classifyExitObject(code int, d *pyjson.Doc) Verdict {
	if code == 2 {
		return Verdict{Status: StatusRefused}
	}
	return exitVerdict(code, classifyObject(d))
}

// exitVerdict is the run-status verdict of a report class c at a Flow exit code
// other than 2.
func exitVerdict(code int, c reportClass) Verdict {
	if code == 0 {
		return applyUnsigned(c)
	}
	if c.status == StatusSuccess {
		return Verdict{Status: StatusError, Outcome: c.outcome, Reason: ReasonInconsistentExit}
	}
	return Verdict{Status: c.status, Outcome: c.outcome}
}

// ErrReportInvalid is wrapped by [CheckReport] for a report that Flow's
// RunReport validator would reject (as far as this package approximates it).
var ErrReportInvalid = errors.New("report fails flow consistency rules")

// CheckReport approximates Flow's RunReport validation (its consistency
// rules plus type checks of the fields the agent reads). It
// returns nil for a report Flow would accept, and an error wrapping
// [ErrReportInvalid] naming the failed rule (never a value) otherwise. The
// Needs Attention projector treats an invalid report as absent.
func CheckReport(report []byte) error {
	d, ok := ParseObject(report)
	if !ok {
		return fmt.Errorf("%w: not a JSON object", ErrReportInvalid)
	}
	return CheckReportObject(d)
}

// CheckReportObject is [CheckReport] for a report already parsed by
// [ParseObject] (so a caller that needs the members parses once).
func CheckReportObject(d *pyjson.Doc) error {
	if d == nil || d.Kind(d.Root()) != pyjson.Object {
		return fmt.Errorf("%w: not a JSON object", ErrReportInvalid)
	}
	c := classifyObject(d)
	if c.inconsistent {
		return fmt.Errorf("%w: outcome classification rules", ErrReportInvalid)
	}
	if err := checkTypes(d); err != nil {
		return err
	}
	return checkEnvelope(d)
}

func invalid(what string) error { return fmt.Errorf("%w: %s", ErrReportInvalid, what) }

// checkTypes checks the fields the agent reads.
func checkTypes(d *pyjson.Doc) error {
	r := d.Root()
	if v := d.Get(r, "started_at"); present(d, v) && !isString(d, v) {
		return invalid("started_at type")
	}
	if h := d.Get(r, "halt"); present(d, h) {
		if d.Kind(h) != pyjson.Object {
			return invalid("halt type")
		}
		for _, k := range []string{"observed_texts", "completed_intents"} {
			if v := d.Get(h, k); present(d, v) && !isStringArray(d, v) {
				return invalid("halt." + k + " type")
			}
		}
	}
	// results: null is an empty list (as it always was here).
	if v := d.Get(r, "results"); v != pyjson.None && d.Kind(v) != pyjson.Null {
		if d.Kind(v) != pyjson.Array {
			return invalid("results type")
		}
		for res := range d.Elems(v) {
			if d.Kind(res) != pyjson.Object {
				return invalid("result type")
			}
			for _, k := range []string{"ok", "skipped", "exception_handled", "safety_halt"} {
				if v := d.Get(res, k); v != pyjson.None && !isBool(d, v) {
					return invalid("result." + k + " type")
				}
			}
			for _, k := range []string{"step_id", "before_png", "after_png"} {
				if v := d.Get(res, k); present(d, v) && !isString(d, v) {
					return invalid("result." + k + " type")
				}
			}
		}
	}
	return nil
}

// checkEnvelope applies Flow 1.32's RunReport and ExecutionOutcomeEnvelope
// validators beyond the classifier's rules (Flow's own consistency rules). Missing envelope members take Flow's model defaults
// (false, 0, empty lists). An envelope that is not an object here (the
// classifier ignores it when execution_outcome is null) has no members.
func checkEnvelope(d *pyjson.Doc) error {
	r := d.Root()
	// RunReport: the qualification-only marker must match the typed case
	// binding, and defaults to it.
	qualOnly := d.Str(d.Get(r, "governed_qualification_case_id_sha256")) != ""
	if v := d.Get(r, "qualification_evidence_only"); v != pyjson.None {
		if !isBool(d, v) || d.True(v) != qualOnly {
			return invalid("qualification-only marker")
		}
	}
	env := d.Get(r, "outcome_envelope")
	if !present(d, env) {
		return nil
	}
	p := d.Str(d.Get(r, "execution_outcome"))
	success := d.True(d.Get(r, "success"))
	// envBool: a missing member is false; a present one must be a boolean.
	envBool := func(k string) (bool, bool) {
		v := d.Get(env, k)
		return d.True(v), v == pyjson.None || isBool(d, v)
	}
	completed, ok1 := envBool("execution_completed")
	envProd, ok2 := envBool("production_eligible")
	envQual, ok3 := envBool("qualification_evidence_only")
	if !ok1 || !ok2 || !ok3 {
		return invalid("envelope boolean member")
	}
	// RunReport bindings.
	rc := d.Get(r, "execution_completed")
	if !present(d, rc) {
		return invalid("execution_completed missing beside an envelope")
	}
	if d.True(rc) != completed {
		return invalid("execution_completed differs from the envelope")
	}
	if d.Get(env, "qualification_evidence_only") != pyjson.None && envQual != qualOnly {
		return invalid("qualification-only marker differs from the envelope")
	}
	envProfile := d.Str(d.Get(env, "profile"))
	if isProduction(envProfile) && success != (p == OutcomeVerified) {
		return invalid("production success must mean VERIFIED")
	}
	// ExecutionOutcomeEnvelope.
	req, err := contractCounts(d, d.Get(env, "required_contracts"))
	if err != nil {
		return err
	}
	pass, err := contractCounts(d, d.Get(env, "passed_contracts"))
	if err != nil {
		return err
	}
	for k := range req {
		if pass[k] > req[k] {
			return invalid("passed contracts exceed required")
		}
	}
	if (p == OutcomeVerified || p == OutcomeCompletedUnverified) && !completed {
		return invalid("completed outcome without execution_completed")
	}
	classes := map[string]bool{}
	if v := d.Get(env, "evidence_classes"); present(d, v) {
		if d.Kind(v) != pyjson.Array {
			return invalid("evidence_classes type")
		}
		for c := range d.Elems(v) {
			if !isString(d, c) || classes[d.Str(c)] {
				return invalid("evidence_classes entries")
			}
			classes[d.Str(c)] = true
		}
	}
	evidence := pyjson.None
	if v := d.Get(env, "postcondition_evidence"); present(d, v) {
		if d.Kind(v) != pyjson.Array {
			return invalid("postcondition_evidence type")
		}
		evidence = v
	}
	if int64(d.Len(evidence)) != req[countPostcondition] {
		return invalid("postcondition evidence count")
	}
	contract := d.Str(d.Get(env, "workflow_contract_sha256"))
	passedEvidence := int64(0)
	for item := range d.Elems(evidence) {
		if d.Kind(item) != pyjson.Object {
			return invalid("postcondition evidence entry")
		}
		if d.StrIs(d.Get(item, "verdict"), "passed") {
			passedEvidence++
		}
		if contract == "" || !d.StrIs(d.Get(item, "workflow_contract_sha256"), contract) {
			return invalid("postcondition evidence contract binding")
		}
	}
	if passedEvidence != pass[countPostcondition] {
		return invalid("passed postcondition evidence count")
	}
	if classes["postcondition"] != (pass[countPostcondition] > 0) {
		return invalid("postcondition evidence class")
	}
	if p == OutcomeVerified {
		if pass != req {
			return invalid("VERIFIED with unpassed contracts")
		}
		if !isProduction(envProfile) {
			return invalid("VERIFIED without a production profile")
		}
		if !envProd && !envQual {
			return invalid("VERIFIED neither production-eligible nor qualification-only")
		}
		if req[countAuthorization] < 1 || pass[countAuthorization] < 1 {
			return invalid("VERIFIED without an authorization contract")
		}
	} else if envProd {
		return invalid("production eligibility without VERIFIED")
	}
	if envProd && envQual {
		return invalid("production eligibility with qualification-only evidence")
	}
	comp := int64(0)
	if v := d.Get(env, "compensation_actions"); v != pyjson.None {
		n, ok := nonNegInt(d, v)
		if !ok {
			return invalid("compensation_actions type")
		}
		comp = n
	}
	if classes["compensation"] != (comp > 0) {
		return invalid("compensation evidence class")
	}
	if p == OutcomeRolledBack {
		if comp < 1 {
			return invalid("rolled back without a compensation action")
		}
	} else if comp > 0 {
		return invalid("compensation without ROLLED_BACK")
	}
	return nil
}

// The members of an OutcomeContractCounts object, as indexes of [counts].
const (
	countAuthorization = iota
	countIdentity
	countPostcondition
	countEffect
)

var countNames = [...]string{"authorization", "identity", "postcondition", "effect"}

// counts are the four contract counts, indexed by the count constants.
type counts [len(countNames)]int64

// contractCounts decodes an OutcomeContractCounts object: the four counts,
// each a non-negative integer, defaulting to 0 (absent or null: all 0).
func contractCounts(d *pyjson.Doc, v pyjson.V) (counts, error) {
	var out counts
	if d.IsNull(v) {
		return out, nil
	}
	if d.Kind(v) != pyjson.Object {
		return out, invalid("contract counts type")
	}
	for i, k := range countNames {
		m := d.Get(v, k)
		if m == pyjson.None {
			continue
		}
		n, ok := nonNegInt(d, m)
		if !ok {
			return out, invalid("contract count type")
		}
		out[i] = n
	}
	return out, nil
}

// isStringArray reports whether v is an array of strings.
func isStringArray(d *pyjson.Doc, v pyjson.V) bool {
	if d.Kind(v) != pyjson.Array {
		return false
	}
	for e := range d.Elems(v) {
		if !isString(d, e) {
			return false
		}
	}
	return true
}

// collect returns the elements of array v.
func collect(d *pyjson.Doc, v pyjson.V) []pyjson.V {
	out := make([]pyjson.V, 0, d.Len(v))
	for e := range d.Elems(v) {
		out = append(out, e)
	}
	return out
}

// memberEqual compares two member values the way Python compares the parsed
// objects: numbers by value (0 == 0.0), objects by members, arrays in order;
// a boolean never equals a number. An absent value (None) equals null.
func memberEqual(d *pyjson.Doc, a, b pyjson.V) bool {
	if an, bn := d.IsNull(a), d.IsNull(b); an || bn {
		return an && bn
	}
	return valueEqual(d, a, b)
}

// valueEqual is memberEqual of two present values.
func valueEqual(d *pyjson.Doc, a, b pyjson.V) bool {
	k := d.Kind(a)
	if k != d.Kind(b) {
		return false
	}
	switch k {
	case pyjson.Null:
		return true
	case pyjson.Bool:
		return d.True(a) == d.True(b)
	case pyjson.Number:
		x, y := d.Bytes(a), d.Bytes(b)
		if bytes.Equal(x, y) {
			return true
		}
		// big.Float's default 64-bit mantissa, as the comparison always was.
		fx, ok1 := new(big.Float).SetString(string(x))
		fy, ok2 := new(big.Float).SetString(string(y))
		return ok1 && ok2 && fx.Cmp(fy) == 0
	case pyjson.String:
		return bytes.Equal(d.Bytes(a), d.Bytes(b))
	case pyjson.Array:
		if d.Len(a) != d.Len(b) {
			return false
		}
		ys := collect(d, b)
		i := 0
		for x := range d.Elems(a) {
			if !valueEqual(d, x, ys[i]) {
				return false
			}
			i++
		}
		return true
	case pyjson.Object:
		if d.Len(a) != d.Len(b) {
			return false
		}
		for key, x := range d.Members(a) {
			y := d.Get(b, d.Str(key))
			if y == pyjson.None || !valueEqual(d, x, y) {
				return false
			}
		}
		return true
	}
	return false
}
