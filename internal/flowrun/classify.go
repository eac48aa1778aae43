package flowrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/OpenAdaptAI/openadapt-agent/internal/pyjson"
)

// Status is a run status (mcp-surface.md §8). The terminal statuses are
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

// Reason refines a status for message selection. flow-run.md §6.3: "Reasons
// the classifier exposes: unsigned_production_success (6.2), inconsistent_exit
// and no_report". Every other verdict has the empty reason.
type Reason string

// The reasons of flow-run.md §6.2/§6.3.
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

// The five precise execution outcomes (flow-run.md §5).
const (
	OutcomeVerified            = "VERIFIED"
	OutcomeCompletedUnverified = "COMPLETED_UNVERIFIED"
	OutcomeHalted              = "HALTED"
	OutcomeFailed              = "FAILED"
	OutcomeRolledBack          = "ROLLED_BACK"
)

// Verdict is a classification: the public status, the precise outcome when
// the report carried a valid one (rules 4–14 of flow-run.md §6.1; "" otherwise),
// the reason, and EffectVerified, which is true exactly when Reason is
// [ReasonUnsignedProductionSuccess] (mcp-surface.md §14.1 C1).
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

// reportClass is the §6.1 result before §6.2 is applied.
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

// present reports whether key is in obj with a non-null value.
func present(obj map[string]json.RawMessage, key string) bool {
	v, ok := obj[key]
	return ok && !isNull(v)
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// jsonBool returns the value and true when v is exactly a JSON boolean.
func jsonBool(v json.RawMessage) (bool, bool) {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// jsonString returns the value and true when v is a JSON string.
func jsonString(v json.RawMessage) (string, bool) {
	var s string
	t := bytes.TrimSpace(v)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	if err := json.Unmarshal(t, &s); err != nil {
		return "", false
	}
	return s, true
}

// flowJSON are the input rules for the JSON files Flow writes and reads back
// (report.json and the run files): pyjson's strict core — strict UTF-8, no
// lone surrogate escape, no duplicate key at any depth, CPython's nesting and
// integer-digit bounds, no byte order mark. This package only compares
// floats, never writes them, so a float is kept as its token. A file these
// rules refuse is treated exactly as one that is not JSON at all (fail
// closed: Flow's json.load would not give the same object, or any).
var flowJSON = pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits, Floats: pyjson.FloatRefuse}

// ParseObject parses data, one complete JSON document, under the strict
// rules above and returns the raw bytes of its top-level members. ok is false
// for anything the rules refuse and for any other top-level value. The
// member bytes alias data.
func ParseObject(data []byte) (map[string]json.RawMessage, bool) {
	var d pyjson.Doc
	if d.Parse(data, flowJSON) != nil || d.Kind(d.Root()) != pyjson.Object {
		return nil, false
	}
	obj := make(map[string]json.RawMessage, d.Len(d.Root()))
	for k, v := range d.Members(d.Root()) {
		r := d.Raw(v)
		obj[d.Str(k)] = r[:len(r):len(r)]
	}
	return obj, true
}

// classifyObject applies the decision table of flow-run.md §6.1, top-down.
func classifyObject(r map[string]json.RawMessage) reportClass {
	errc := func(outcome string) reportClass {
		return reportClass{status: StatusError, outcome: outcome, inconsistent: true}
	}
	// Rule 2: P absent or null.
	pRaw, ok := r["execution_outcome"]
	if !ok || isNull(pRaw) {
		switch b, isBool := jsonBool(r["success"]); {
		case isBool && b:
			return reportClass{status: StatusSuccess}
		case isBool && !b:
			return reportClass{status: StatusHalt}
		default:
			return errc("")
		}
	}
	// Rule 3: P is not one of the five strings.
	p, isStr := jsonString(pRaw)
	if !isStr || !validOutcomes[p] {
		return errc("")
	}
	// Rule 4: success is not a JSON boolean.
	success, isBool := jsonBool(r["success"])
	if !isBool {
		return errc(p)
	}
	// Rule 5: execution_profile present, non-null, not demo/standard/regulated.
	profile := ""
	if present(r, "execution_profile") {
		s, ok := jsonString(r["execution_profile"])
		if !ok || !validProfiles[s] {
			return errc(p)
		}
		profile = s
	}
	// Rule 6: production_eligible present, non-null and not a boolean.
	prodEligible := false
	if present(r, "production_eligible") {
		b, ok := jsonBool(r["production_eligible"])
		if !ok {
			return errc(p)
		}
		prodEligible = b
	}
	// Rule 7: production_eligible true and (P ≠ VERIFIED or profile not
	// standard/regulated).
	if prodEligible && (p != OutcomeVerified || !isProduction(profile)) {
		return errc(p)
	}
	// Rule 8: outcome_envelope present and (not an object, or its outcome ≠ P).
	if present(r, "outcome_envelope") {
		env, ok := ParseObject(r["outcome_envelope"])
		if !ok {
			return errc(p)
		}
		if eo, ok := jsonString(env["outcome"]); !ok || eo != p {
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
			rv, inReport := r[k[0]]
			if !inReport {
				continue
			}
			if !jsonEqual(rv, env[k[1]]) {
				return errc(p)
			}
		}
	}
	// Rule 10: VERIFIED needs a standard/regulated profile.
	if p == OutcomeVerified && !isProduction(profile) {
		return errc(p)
	}
	// Rule 11: VERIFIED with success true is success (then §6.2), else error.
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
	obj, ok := ParseObject(report)
	if !ok {
		return reportClass{status: StatusError, inconsistent: true}
	}
	return classifyObject(obj)
}

// classifyReport classifies a report.json body on its own, as at Flow exit 0:
// flow-run.md §6.1 (rules 1–14) followed by §6.2, so a production-eligible
// VERIFIED report gives status error with [ReasonUnsignedProductionSuccess]
// and EffectVerified. Invalid JSON and non-objects are error (rule 1).
// JSON booleans only: "yes" is not true.
func classifyReport(report []byte) Verdict { return applyUnsigned(classifyBytes(report)) }

// applyUnsigned turns a §6.1 class into the exit-0 verdict (§6.2).
func applyUnsigned(c reportClass) Verdict {
	v := Verdict{Status: c.status, Outcome: c.outcome}
	if c.status == StatusSuccess && c.productionEligible {
		// §6.2: "the local agent cannot mint a Seal, so a production-eligible
		// VERIFIED run is never reported as success by it".
		v.Status = StatusError
		v.Reason = ReasonUnsignedProductionSuccess
		v.EffectVerified = true
	}
	return v
}

// ClassifyExit is the run status of flow-run.md §6.3 for a Flow process that
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
	obj, ok := ParseObject(report)
	if !ok {
		// A caller passing ReportPresent with bytes that are not an object:
		// the report is unusable (§6.3), not "no report".
		return Verdict{Status: StatusError}
	}
	return classifyExitObject(code, obj)
}

// classifyExitObject is ClassifyExit for a present report already parsed.
func classifyExitObject(code int, obj map[string]json.RawMessage) Verdict {
	if code == 2 {
		return Verdict{Status: StatusRefused}
	}
	c := classifyObject(obj)
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

// CheckReport approximates Flow's RunReport validation (flow-run.md §5
// consistency rules plus type checks of the fields the agent reads). It
// returns nil for a report Flow would accept, and an error wrapping
// [ErrReportInvalid] naming the failed rule (never a value) otherwise. The
// Needs Attention projector treats an invalid report as absent (§8.1).
func CheckReport(report []byte) error {
	obj, ok := ParseObject(report)
	if !ok {
		return fmt.Errorf("%w: not a JSON object", ErrReportInvalid)
	}
	return CheckReportObject(obj)
}

// CheckReportObject is [CheckReport] for a report already decoded into its
// top-level members (so a caller that needs the members parses once).
func CheckReportObject(obj map[string]json.RawMessage) error {
	if obj == nil {
		return fmt.Errorf("%w: not a JSON object", ErrReportInvalid)
	}
	c := classifyObject(obj)
	if c.inconsistent {
		return fmt.Errorf("%w: outcome classification rules", ErrReportInvalid)
	}
	if err := checkTypes(obj); err != nil {
		return err
	}
	return checkEnvelope(obj)
}

func invalid(what string) error { return fmt.Errorf("%w: %s", ErrReportInvalid, what) }

// checkTypes checks the fields the agent reads.
func checkTypes(r map[string]json.RawMessage) error {
	if v, ok := r["started_at"]; ok && !isNull(v) {
		if _, ok := jsonString(v); !ok {
			return invalid("started_at type")
		}
	}
	if present(r, "halt") {
		h, ok := ParseObject(r["halt"])
		if !ok {
			return invalid("halt type")
		}
		for _, k := range []string{"observed_texts", "completed_intents"} {
			if v, ok := h[k]; ok && !isNull(v) && !isStringArray(v) {
				return invalid("halt." + k + " type")
			}
		}
	}
	if v, ok := r["results"]; ok {
		var results []json.RawMessage
		if err := json.Unmarshal(v, &results); err != nil {
			return invalid("results type")
		}
		for _, rr := range results {
			res, ok := ParseObject(rr)
			if !ok {
				return invalid("result type")
			}
			for _, k := range []string{"ok", "skipped", "exception_handled", "safety_halt"} {
				if v, ok := res[k]; ok {
					if _, isBool := jsonBool(v); !isBool {
						return invalid("result." + k + " type")
					}
				}
			}
			for _, k := range []string{"step_id", "before_png", "after_png"} {
				if v, ok := res[k]; ok && !isNull(v) {
					if _, isStr := jsonString(v); !isStr {
						return invalid("result." + k + " type")
					}
				}
			}
		}
	}
	return nil
}

// checkEnvelope applies Flow 1.32's RunReport and ExecutionOutcomeEnvelope
// validators beyond the classifier's rules (flow-run.md §5 "Flow's own
// consistency rules"). Missing envelope members take Flow's model defaults
// (false, 0, empty lists).
func checkEnvelope(r map[string]json.RawMessage) error {
	// RunReport: the qualification-only marker must match the typed case
	// binding, and defaults to it.
	caseID, _ := jsonString(r["governed_qualification_case_id_sha256"])
	qualOnly := caseID != ""
	if v, ok := r["qualification_evidence_only"]; ok {
		b, isBool := jsonBool(v)
		if !isBool || b != qualOnly {
			return invalid("qualification-only marker")
		}
	}
	if !present(r, "outcome_envelope") {
		return nil
	}
	env, _ := ParseObject(r["outcome_envelope"])
	p, _ := jsonString(r["execution_outcome"])
	success, _ := jsonBool(r["success"])
	envBool := func(k string) (bool, bool) {
		v, ok := env[k]
		if !ok {
			return false, true
		}
		return jsonBool(v)
	}
	completed, ok1 := envBool("execution_completed")
	envProd, ok2 := envBool("production_eligible")
	envQual, ok3 := envBool("qualification_evidence_only")
	if !ok1 || !ok2 || !ok3 {
		return invalid("envelope boolean member")
	}
	// RunReport bindings.
	if !present(r, "execution_completed") {
		return invalid("execution_completed missing beside an envelope")
	}
	if rc, _ := jsonBool(r["execution_completed"]); rc != completed {
		return invalid("execution_completed differs from the envelope")
	}
	if _, ok := env["qualification_evidence_only"]; ok && envQual != qualOnly {
		return invalid("qualification-only marker differs from the envelope")
	}
	envProfile, _ := jsonString(env["profile"])
	if isProduction(envProfile) && success != (p == OutcomeVerified) {
		return invalid("production success must mean VERIFIED")
	}
	// ExecutionOutcomeEnvelope.
	req, err := contractCounts(env["required_contracts"])
	if err != nil {
		return err
	}
	pass, err := contractCounts(env["passed_contracts"])
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
	if v, ok := env["evidence_classes"]; ok && !isNull(v) {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return invalid("evidence_classes type")
		}
		for _, c := range list {
			s, ok := jsonString(c)
			if !ok || classes[s] {
				return invalid("evidence_classes entries")
			}
			classes[s] = true
		}
	}
	var evidence []json.RawMessage
	if v, ok := env["postcondition_evidence"]; ok && !isNull(v) {
		if json.Unmarshal(v, &evidence) != nil {
			return invalid("postcondition_evidence type")
		}
	}
	if int64(len(evidence)) != req["postcondition"] {
		return invalid("postcondition evidence count")
	}
	contract, _ := jsonString(env["workflow_contract_sha256"])
	passedEvidence := int64(0)
	for _, e := range evidence {
		item, ok := ParseObject(e)
		if !ok {
			return invalid("postcondition evidence entry")
		}
		if v, _ := jsonString(item["verdict"]); v == "passed" {
			passedEvidence++
		}
		if c, _ := jsonString(item["workflow_contract_sha256"]); contract == "" || c != contract {
			return invalid("postcondition evidence contract binding")
		}
	}
	if passedEvidence != pass["postcondition"] {
		return invalid("passed postcondition evidence count")
	}
	if classes["postcondition"] != (pass["postcondition"] > 0) {
		return invalid("postcondition evidence class")
	}
	if p == OutcomeVerified {
		for k := range req {
			if pass[k] != req[k] {
				return invalid("VERIFIED with unpassed contracts")
			}
		}
		if !isProduction(envProfile) {
			return invalid("VERIFIED without a production profile")
		}
		if !envProd && !envQual {
			return invalid("VERIFIED neither production-eligible nor qualification-only")
		}
		if req["authorization"] < 1 || pass["authorization"] < 1 {
			return invalid("VERIFIED without an authorization contract")
		}
	} else if envProd {
		return invalid("production eligibility without VERIFIED")
	}
	if envProd && envQual {
		return invalid("production eligibility with qualification-only evidence")
	}
	comp := int64(0)
	if v, ok := env["compensation_actions"]; ok {
		n := jsonInt(v)
		if n == nil || n.Sign() < 0 || !n.IsInt64() {
			return invalid("compensation_actions type")
		}
		comp = n.Int64()
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

// contractCounts decodes an OutcomeContractCounts object: the four counts,
// each a non-negative integer, defaulting to 0.
func contractCounts(v json.RawMessage) (map[string]int64, error) {
	out := map[string]int64{"authorization": 0, "identity": 0, "postcondition": 0, "effect": 0}
	if len(v) == 0 || isNull(v) {
		return out, nil
	}
	obj, ok := ParseObject(v)
	if !ok {
		return nil, invalid("contract counts type")
	}
	for k := range out {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		n := jsonInt(raw)
		if n == nil || n.Sign() < 0 || !n.IsInt64() {
			return nil, invalid("contract count type")
		}
		out[k] = n.Int64()
	}
	return out, nil
}

func isStringArray(v json.RawMessage) bool {
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return false
	}
	for _, e := range a {
		if _, ok := jsonString(e); !ok {
			return false
		}
	}
	return true
}

// jsonInt returns the value of an integer literal (no '.', 'e' or 'E'), or nil.
func jsonInt(v json.RawMessage) *big.Int {
	t := bytes.TrimSpace(v)
	if len(t) == 0 || bytes.ContainsAny(t, ".eE\"") {
		return nil
	}
	n, ok := new(big.Int).SetString(string(t), 10)
	if !ok {
		return nil
	}
	return n
}

// jsonEqual compares two JSON values the way Python compares the parsed
// objects: numbers by value (0 == 0.0), objects by members, arrays in order.
// A missing value (nil) equals null.
func jsonEqual(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 {
		a = json.RawMessage("null")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("null")
	}
	va, ok1 := jsonValue(a)
	vb, ok2 := jsonValue(b)
	return ok1 && ok2 && valueEqual(va, vb)
}

// jsonValue is the tree of one raw member from pyjson's map builder (numbers
// as their exact json.Number tokens).
func jsonValue(v json.RawMessage) (any, bool) {
	d, err := pyjson.Parse(v, flowJSON)
	if err != nil {
		return nil, false
	}
	return d.Value(d.Root()), true
}

func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, ok1 := new(big.Float).SetString(string(x))
		fy, ok2 := new(big.Float).SetString(string(y))
		return ok1 && ok2 && fx.Cmp(fy) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !valueEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
