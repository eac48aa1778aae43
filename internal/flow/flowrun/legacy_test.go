package flowrun

// The raw-member classifier as it was before it moved onto pyjson handles,
// kept only as the oracle of the differential tests in
// classify_diff_test.go: each function is the previous production code with
// its name prefixed "old"; nothing here is linked into the binary.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

func oldPresent(obj map[string]json.RawMessage, key string) bool {
	v, ok := obj[key]
	return ok && !oldIsNull(v)
}

func oldIsNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// oldJsonBool returns the value and true when v is exactly a JSON boolean.
func oldJsonBool(v json.RawMessage) (bool, bool) {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func oldJsonString(v json.RawMessage) (string, bool) {
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

func oldParseObject(data []byte) (map[string]json.RawMessage, bool) {
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

func oldClassifyObject(r map[string]json.RawMessage) reportClass {
	errc := func(outcome string) reportClass {
		return reportClass{status: StatusError, outcome: outcome, inconsistent: true}
	}
	// Rule 2: P absent or null.
	pRaw, ok := r["execution_outcome"]
	if !ok || oldIsNull(pRaw) {
		switch b, isBool := oldJsonBool(r["success"]); {
		case isBool && b:
			return reportClass{status: StatusSuccess}
		case isBool && !b:
			return reportClass{status: StatusHalt}
		default:
			return errc("")
		}
	}
	// Rule 3: P is not one of the five strings.
	p, isStr := oldJsonString(pRaw)
	if !isStr || !validOutcomes[p] {
		return errc("")
	}
	// Rule 4: success is not a JSON boolean.
	success, isBool := oldJsonBool(r["success"])
	if !isBool {
		return errc(p)
	}
	// Rule 5: execution_profile oldPresent, non-null, not demo/standard/regulated.
	profile := ""
	if oldPresent(r, "execution_profile") {
		s, ok := oldJsonString(r["execution_profile"])
		if !ok || !validProfiles[s] {
			return errc(p)
		}
		profile = s
	}
	// Rule 6: production_eligible oldPresent, non-null and not a boolean.
	prodEligible := false
	if oldPresent(r, "production_eligible") {
		b, ok := oldJsonBool(r["production_eligible"])
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
	// Rule 8: outcome_envelope oldPresent and (not an object, or its outcome ≠ P).
	if oldPresent(r, "outcome_envelope") {
		env, ok := oldParseObject(r["outcome_envelope"])
		if !ok {
			return errc(p)
		}
		if eo, ok := oldJsonString(env["outcome"]); !ok || eo != p {
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
			if !oldJsonEqual(rv, env[k[1]]) {
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

func oldCheckReportObject(obj map[string]json.RawMessage) error {
	if obj == nil {
		return fmt.Errorf("%w: not a JSON object", ErrReportInvalid)
	}
	c := oldClassifyObject(obj)
	if c.inconsistent {
		return fmt.Errorf("%w: outcome classification rules", ErrReportInvalid)
	}
	if err := oldCheckTypes(obj); err != nil {
		return err
	}
	return oldCheckEnvelope(obj)
}

func oldCheckTypes(r map[string]json.RawMessage) error {
	if v, ok := r["started_at"]; ok && !oldIsNull(v) {
		if _, ok := oldJsonString(v); !ok {
			return invalid("started_at type")
		}
	}
	if oldPresent(r, "halt") {
		h, ok := oldParseObject(r["halt"])
		if !ok {
			return invalid("halt type")
		}
		for _, k := range []string{"observed_texts", "completed_intents"} {
			if v, ok := h[k]; ok && !oldIsNull(v) && !oldIsStringArray(v) {
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
			res, ok := oldParseObject(rr)
			if !ok {
				return invalid("result type")
			}
			for _, k := range []string{"ok", "skipped", "exception_handled", "safety_halt"} {
				if v, ok := res[k]; ok {
					if _, isBool := oldJsonBool(v); !isBool {
						return invalid("result." + k + " type")
					}
				}
			}
			for _, k := range []string{"step_id", "before_png", "after_png"} {
				if v, ok := res[k]; ok && !oldIsNull(v) {
					if _, isStr := oldJsonString(v); !isStr {
						return invalid("result." + k + " type")
					}
				}
			}
		}
	}
	return nil
}

func oldCheckEnvelope(r map[string]json.RawMessage) error {
	// RunReport: the qualification-only marker must match the typed case
	// binding, and defaults to it.
	caseID, _ := oldJsonString(r["governed_qualification_case_id_sha256"])
	qualOnly := caseID != ""
	if v, ok := r["qualification_evidence_only"]; ok {
		b, isBool := oldJsonBool(v)
		if !isBool || b != qualOnly {
			return invalid("qualification-only marker")
		}
	}
	if !oldPresent(r, "outcome_envelope") {
		return nil
	}
	env, _ := oldParseObject(r["outcome_envelope"])
	p, _ := oldJsonString(r["execution_outcome"])
	success, _ := oldJsonBool(r["success"])
	envBool := func(k string) (bool, bool) {
		v, ok := env[k]
		if !ok {
			return false, true
		}
		return oldJsonBool(v)
	}
	completed, ok1 := envBool("execution_completed")
	envProd, ok2 := envBool("production_eligible")
	envQual, ok3 := envBool("qualification_evidence_only")
	if !ok1 || !ok2 || !ok3 {
		return invalid("envelope boolean member")
	}
	// RunReport bindings.
	if !oldPresent(r, "execution_completed") {
		return invalid("execution_completed missing beside an envelope")
	}
	if rc, _ := oldJsonBool(r["execution_completed"]); rc != completed {
		return invalid("execution_completed differs from the envelope")
	}
	if _, ok := env["qualification_evidence_only"]; ok && envQual != qualOnly {
		return invalid("qualification-only marker differs from the envelope")
	}
	envProfile, _ := oldJsonString(env["profile"])
	if isProduction(envProfile) && success != (p == OutcomeVerified) {
		return invalid("production success must mean VERIFIED")
	}
	// ExecutionOutcomeEnvelope.
	req, err := oldContractCounts(env["required_contracts"])
	if err != nil {
		return err
	}
	pass, err := oldContractCounts(env["passed_contracts"])
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
	if v, ok := env["evidence_classes"]; ok && !oldIsNull(v) {
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil {
			return invalid("evidence_classes type")
		}
		for _, c := range list {
			s, ok := oldJsonString(c)
			if !ok || classes[s] {
				return invalid("evidence_classes entries")
			}
			classes[s] = true
		}
	}
	var evidence []json.RawMessage
	if v, ok := env["postcondition_evidence"]; ok && !oldIsNull(v) {
		if json.Unmarshal(v, &evidence) != nil {
			return invalid("postcondition_evidence type")
		}
	}
	if int64(len(evidence)) != req["postcondition"] {
		return invalid("postcondition evidence count")
	}
	contract, _ := oldJsonString(env["workflow_contract_sha256"])
	passedEvidence := int64(0)
	for _, e := range evidence {
		item, ok := oldParseObject(e)
		if !ok {
			return invalid("postcondition evidence entry")
		}
		if v, _ := oldJsonString(item["verdict"]); v == "passed" {
			passedEvidence++
		}
		if c, _ := oldJsonString(item["workflow_contract_sha256"]); contract == "" || c != contract {
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
		n := oldJsonInt(v)
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

func oldContractCounts(v json.RawMessage) (map[string]int64, error) {
	out := map[string]int64{"authorization": 0, "identity": 0, "postcondition": 0, "effect": 0}
	if len(v) == 0 || oldIsNull(v) {
		return out, nil
	}
	obj, ok := oldParseObject(v)
	if !ok {
		return nil, invalid("contract counts type")
	}
	for k := range out {
		raw, ok := obj[k]
		if !ok {
			continue
		}
		n := oldJsonInt(raw)
		if n == nil || n.Sign() < 0 || !n.IsInt64() {
			return nil, invalid("contract count type")
		}
		out[k] = n.Int64()
	}
	return out, nil
}

func oldIsStringArray(v json.RawMessage) bool {
	var a []json.RawMessage
	if err := json.Unmarshal(v, &a); err != nil {
		return false
	}
	for _, e := range a {
		if _, ok := oldJsonString(e); !ok {
			return false
		}
	}
	return true
}

func oldJsonInt(v json.RawMessage) *big.Int {
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

func oldJsonEqual(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 {
		a = json.RawMessage("null")
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = json.RawMessage("null")
	}
	va, ok1 := oldJsonValue(a)
	vb, ok2 := oldJsonValue(b)
	return ok1 && ok2 && oldValueEqual(va, vb)
}

func oldJsonValue(v json.RawMessage) (any, bool) {
	d, err := pyjson.Parse(v, flowJSON)
	if err != nil {
		return nil, false
	}
	return d.Value(d.Root()), true
}

func oldValueEqual(a, b any) bool {
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
			if !ok || !oldValueEqual(xv, yv) {
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
			if !oldValueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

func oldSummarizeObject(r map[string]json.RawMessage) Summary {
	var s Summary
	var results []json.RawMessage
	if v, ok := r["results"]; ok && json.Unmarshal(v, &results) == nil && results != nil {
		total, okN, skipped := len(results), 0, 0
		for _, rr := range results {
			obj, ok := oldParseObject(rr)
			if !ok {
				continue
			}
			if b, isBool := oldJsonBool(obj["ok"]); isBool && b {
				okN++
			}
			if b, isBool := oldJsonBool(obj["skipped"]); isBool && b {
				skipped++
			}
		}
		s.StepsTotal, s.StepsOK, s.StepsSkipped = &total, &okN, &skipped
	}
	s.HealCount = oldNonNegInt(r["heal_count"])
	s.ModelCalls = oldNonNegInt(r["model_calls"])
	if t := bytes.TrimSpace(r["total_ms"]); len(t) > 0 && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		if f, err := strconv.ParseFloat(string(t), 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
			s.TotalMS = &f
		}
	}
	if b, ok := oldJsonBool(r["screenshots_may_leave_box"]); ok {
		s.ScreenshotsMayLeaveBox = &b
	}
	return s
}

func oldNonNegInt(v json.RawMessage) *int64 {
	n := oldJsonInt(v)
	if n == nil || n.Sign() < 0 || !n.IsInt64() {
		return nil
	}
	x := n.Int64()
	return &x
}

func oldHaltObject(obj map[string]json.RawMessage) json.RawMessage {
	h := obj["halt"]
	if len(h) > maxHaltJSON {
		return nil
	}
	if _, ok := oldParseObject(h); !ok {
		return nil
	}
	return h
}
