package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// Schemas are written as JSON text so the wire bytes are exactly the
// documented ones, in their key order (docs/mcp.md "Result envelopes"; the
// tools/list goldens pin them). They are inlined: no $ref, $defs or
// $schema.

const idPattern = workflowid.Pattern

// compact validates and compacts a schema literal. A bad literal is a
// programmer error and panics at init.
func compact(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(fmt.Sprintf("serve: bad schema literal: %v\n%s", err, s))
	}
	return json.RawMessage(b.Bytes())
}

func jstr(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func codesEnum() string {
	parts := make([]string, len(allCodes))
	for i, c := range allCodes {
		parts[i] = jstr(string(c))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// failureSchema is the shared failure envelope.
var failureSchema = `{"type":"object",
 "properties":{"error":{"type":"object",
   "properties":{"code":{"type":"string","enum":` + codesEnum() + `},
                 "message":{"type":"string"},
                 "recovery":{"type":"string"}},
   "required":["code","message","recovery"],"additionalProperties":false}},
 "required":["error"],"additionalProperties":false}`

// enumOf is a JSON enum array of values, in order.
func enumOf[S ~string](values []S) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = jstr(string(v))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// decisionProps are the decision fields' properties (decision.go), without
// braces: on a run result, where they are required, and on a run tool's
// failure envelope, where they are optional.
var decisionProps = `
  "record_changed":{"enum":` + enumOf(recordChangedValues) + `},
  "safe_to_retry":{"type":"boolean"},
  "next_step":{"enum":` + enumOf(nextStepValues) + `},
  "proof":{"enum":` + enumOf(proofValues) + `}`

const decisionRequired = `"record_changed","safe_to_retry","next_step","proof"`

// failedChecksProp is a governed refusal's failed_checks.
var failedChecksProp = `
  "failed_checks":{"type":"array","minItems":1,"uniqueItems":true,"items":{"enum":` + enumOf(flowrun.FailedChecks) + `}}`

// runFailureSchema is a run tool's failure envelope: the shared one, plus
// the optional invalid_inputs and decision fields (new properties at the
// end).
var runFailureSchema = `{"type":"object",
 "properties":{"error":{"type":"object",
   "properties":{"code":{"type":"string","enum":` + codesEnum() + `},
                 "message":{"type":"string"},
                 "recovery":{"type":"string"}},
   "required":["code","message","recovery"],"additionalProperties":false},
  "invalid_inputs":{"type":"array","minItems":1,"items":{"type":"object","properties":{
      "input":{"type":"string"},"problem":{"enum":` + enumOf(inputProblems) + `}},
      "required":["problem"],"additionalProperties":false}},` + decisionProps + `},
 "required":["error"],"additionalProperties":false}`

// outputSchema wraps a tool's success schema as
// {"type":"object","oneOf":[success, failure envelope]}; a run tool's
// failure envelope is runFailureSchema.
func outputSchema(success string, run bool) json.RawMessage {
	f := failureSchema
	if run {
		f = runFailureSchema
	}
	return compact(`{"type":"object","oneOf":[` + success + `,` + f + `]}`)
}

// reasonsEnum is bundle's unavailable-reason enum: present in a listing
// entry exactly when available is false.
var reasonsEnum = func() string {
	q := make([]string, len(bundle.Reasons))
	for i, r := range bundle.Reasons {
		q[i] = `"` + string(r) + `"`
	}
	return "[" + strings.Join(q, ",") + "]"
}()

// workflowProps are the properties of a listing entry without the braces, and
// workflowProtected its protected block (export mode only).
var workflowProps = `
  "id":{"type":"string","pattern":"` + idPattern + `"},
  "label":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(labels.MaxLabel) + `},
  "description":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(labels.MaxDescription) + `},
  "available":{"type":"boolean"},
  "unavailable_reason":{"enum":` + reasonsEnum + `},
  "step_count":{"type":["integer","null"],"minimum":0},
  "parameters":{"type":"array","items":{"type":"object","properties":{
      "name":{"type":"string"},"type":{"enum":["string","number"]},"required":{"type":"boolean"},
      "format":{"enum":["date","date-time"]},
      "description":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(cards.MaxDescription) + `},
      "enum":{"type":"array","minItems":1,"items":{"type":"string"}},
      "pattern":{"type":"string"},
      "minLength":{"type":"integer","minimum":0},"maxLength":{"type":"integer","minimum":0},
      "minimum":{"type":"number"},"maximum":{"type":"number"}},
      "required":["name","type","required"],"additionalProperties":false}},
  "encrypted":{"type":"boolean"},
  "admission":{"enum":["not_required","active","not_actively_admitted"]},
  "name":{"type":"string","pattern":"^[a-z][a-z0-9_]{2,63}$"},
  "done_means":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(cards.MaxPurpose) + `}`

const workflowProtected = `
  "protected":{"type":"object","properties":{
      "slug":{"type":"string"},"name":{"type":["string","null"]},"bundle_dir":{"type":"string"},
      "recorded_params":{"type":"object","additionalProperties":{"type":"string"}},
      "step_intents":{"type":"array","items":{"type":"string"}},
      "load_error":{"type":["string","null"]}},
      "required":["slug","name","bundle_dir","recorded_params","step_intents","load_error"],"additionalProperties":false}`

const workflowRequired = `"id","available","step_count","parameters","encrypted","admission"`

func workflowSchema(export bool) string {
	props := workflowProps
	if export {
		props += "," + workflowProtected
	}
	return `{"type":"object","properties":{` + props + `},"required":[` + workflowRequired + `],"additionalProperties":false}`
}

const listingProtected = `"protected":{"type":"object","properties":{"bundles_dir":{"type":"string"}},"required":["bundles_dir"],"additionalProperties":false}`

func listWorkflowsSchema(export bool) string {
	s := `{"type":"object","properties":{
  "schema_version":{"const":1},
  "run_tools_enabled":{"type":"boolean"},
  "protected_export_enabled":{"type":"boolean"},
  "synthetic_recorded_defaults_enabled":{"type":"boolean"},
  "admission_gate":{"enum":["off","standard","regulated"]},
  "total_matches":{"type":"integer","minimum":0},
  "workflows":{"type":"array","items":` + workflowSchema(export) + `},
  "next_cursor":{"type":["string","null"]},
  "note":{"type":["string","null"]}`
	if export {
		s += "," + listingProtected
	}
	return s + `},
 "required":["schema_version","run_tools_enabled","protected_export_enabled","synthetic_recorded_defaults_enabled","admission_gate","total_matches","workflows","next_cursor","note"],
 "additionalProperties":false}`
}

func searchWorkflowsSchema(export bool) string {
	s := `{"type":"object","properties":{
  "schema_version":{"const":1},"run_tools_enabled":{"type":"boolean"},
  "protected_export_enabled":{"type":"boolean"},"synthetic_recorded_defaults_enabled":{"type":"boolean"},
  "admission_gate":{"enum":["off","standard","regulated"]},
  "total_matches":{"type":"integer","minimum":0},
  "workflows":{"type":"array","items":` + workflowSchema(export) + `},
  "next_cursor":{"type":["string","null"]},
  "note":{"type":["string","null"]}`
	if export {
		s += "," + listingProtected
	}
	return s + `},
 "required":["schema_version","run_tools_enabled","protected_export_enabled","synthetic_recorded_defaults_enabled","admission_gate","total_matches","workflows","next_cursor","note"],
 "additionalProperties":false}`
}

func getWorkflowSchema(export bool) string {
	cert := `"certification":{"type":"object","properties":{"certified":{"type":["boolean","null"]},"message":{"type":"string"}`
	if export {
		cert += `,"protected":{"type":"object","properties":{"certified":{"type":["boolean","null"]},"exit_code":{"type":["integer","null"]},"detail":{"type":"string"}},"required":["certified","exit_code","detail"],"additionalProperties":false}`
	}
	cert += `},"required":["certified","message"],"additionalProperties":false}`
	props := workflowProps + `,
  "schema_version":{"type":["integer","null"]},
  ` + cert
	if export {
		props += "," + workflowProtected
	}
	return `{"type":"object","properties":{` + props + `},"required":[` + workflowRequired + `,"schema_version","certification"],"additionalProperties":false}`
}

// attentionSchema is a Needs Attention item.
const attentionSchema = `{"type":"object","properties":{
  "id":{"type":"string","pattern":"^[0-9a-f]{24}$"},
  "created_at":{"type":["string","null"]},
  "category":{"enum":["human_required","identity","disambiguation","effect_refuted","effect_indeterminate","effect_escalated","effect_unverifiable","placeholder_effect","unmet_guard","postcondition","resolution","halt","operator_review"]},
  "headline":{"type":"string"},
  "next_action":{"type":"string"},
  "status":{"enum":["pending","approved","rejected","encrypted","halted","completed_unverified","failed","rolled_back"]},
  "human_required":{"type":"boolean"},
  "durably_paused":{"type":"boolean"},
  "encrypted_pause":{"type":"boolean"},
  "observed_text_count":{"type":"integer","minimum":0},
  "completed_intent_count":{"type":"integer","minimum":0},
  "before_artifact_id":{"type":["string","null"],"pattern":"^step-[0-9]{3,}-before$"},
  "after_artifact_id":{"type":["string","null"],"pattern":"^step-[0-9]{3,}-after$"},
  "capability":{"oneOf":[{"type":"null"},{"type":"object","properties":{
      "digest":{"type":"string","pattern":"^sha256:[0-9a-f]{64}$"},
      "expires_at":{"type":"string"},
      "allowed_actions":{"type":"array","items":{"enum":["continue","skip","reject","teach","escalate","reconcile"]}},
      "delivery_state":{"enum":["not_delivered","delivered","unknown"]},
      "source_identity_required":{"type":"boolean"},
      "source_identity_status":{"type":["string","null"]}},
      "required":["digest","expires_at","allowed_actions","delivery_state","source_identity_required","source_identity_status"],
      "additionalProperties":false}]}},
 "required":["id","created_at","category","headline","next_action","status","human_required","durably_paused","encrypted_pause","observed_text_count","completed_intent_count","before_artifact_id","after_artifact_id","capability"],"additionalProperties":false}`

const queueSchema = `{"type":"object","properties":{
  "open_count":{"type":"integer","minimum":0},
  "actions_enabled":{"type":"boolean"},
  "live_actions_ready":{"type":"boolean"},
  "items":{"type":"array","items":` + attentionSchema + `},
  "next_cursor":{"type":["string","null"]}},
 "required":["open_count","actions_enabled","live_actions_ready","items","next_cursor"],"additionalProperties":false}`

const summarySchema = `{"type":"object","properties":{
  "steps_total":{"type":"integer","minimum":0},"steps_ok":{"type":"integer","minimum":0},
  "steps_skipped":{"type":"integer","minimum":0},"heal_count":{"type":"integer","minimum":0},
  "model_calls":{"type":"integer","minimum":0},"total_ms":{"type":"number","minimum":0},
  "screenshots_may_leave_box":{"type":"boolean"}},
 "additionalProperties":false}`

const runCommonProps = `
  "schema_version":{"const":1},
  "status":{"enum":["success","halt","refused","timeout","error","running","interrupted"]},
  "success":{"type":"boolean"},
  "workflow_id":{"type":"string","pattern":"` + idPattern + `"},
  "run_id":{"type":"string","pattern":"^run-[0-9a-f]{24}$"},
  "message":{"type":"string"},
  "summary":` + summarySchema + `,
  "execution_outcome":{"enum":["VERIFIED","COMPLETED_UNVERIFIED","HALTED","FAILED","ROLLED_BACK"]},
  "effect_verified":{"const":true},
  "sealed":{"const":false},
  "requires_seal":{"const":true}`

// runOutcomeSchema is a run tool's result.
func runOutcomeSchema(export bool) string {
	props := runCommonProps + `,
  "replayed":{"type":"boolean"},
  "needs_attention":{"oneOf":[{"type":"null"},` + attentionSchema + `]}`
	if export {
		props += `,
  "protected":{"type":"object","properties":{
      "workflow":{"type":["string","null"]},"run_dir":{"type":"string"},"report_path":{"type":["string","null"]},
      "exit_code":{"type":["integer","null"]},"detail":{"type":"string"},"halt":{"type":["object","null"]},
      "stdout_tail":{"type":["string","null"]},"stderr_tail":{"type":["string","null"]}},
      "required":["workflow","run_dir","report_path","exit_code","detail","halt","stdout_tail","stderr_tail"],"additionalProperties":false}`
	}
	props += "," + decisionProps + "," + failedChecksProp
	return `{"type":"object","properties":{` + props + `},
 "required":["schema_version","status","success","workflow_id","run_id","message","summary","sealed","requires_seal","replayed",` + decisionRequired + `],
 "additionalProperties":false}`
}

// runReportSchema is get_run_report's result.
func runReportSchema(export bool) string {
	props := runCommonProps
	if export {
		props += `,
  "protected":{"type":"object","properties":{"run_dir":{"type":"string"},"report":{"type":["object","null"]},"report_omitted":{"type":"boolean"}},"required":["run_dir","report","report_omitted"],"additionalProperties":false}`
	}
	props += "," + decisionProps + "," + failedChecksProp
	return `{"type":"object","properties":{` + props + `},
 "required":["schema_version","status","success","workflow_id","run_id","message","summary","sealed","requires_seal",` + decisionRequired + `],
 "additionalProperties":false}`
}

// Input schemas.
var (
	inputGetWorkflow  = compact(`{"type":"object","properties":{"workflow":{"type":"string","description":"Opaque id from list_workflows or search_workflows, or the workflow's card name."}},"required":["workflow"],"additionalProperties":false}`)
	inputGetRunReport = compact(`{"type":"object","properties":{
  "run_id":{"type":"string","pattern":"^run-[0-9a-f]{24}$","description":"run_id returned by a run tool."},
  "wait_ms":{"type":"integer","minimum":0,"maximum":25000,"description":"Optional. Wait up to this many milliseconds for a running run to finish before answering."}},
 "required":["run_id"],"additionalProperties":false}`)
	inputGetAttention   = compact(`{"type":"object","properties":{"attention_id":{"type":"string","pattern":"^[0-9a-f]{24}$","description":"Opaque id returned by list_needs_attention."}},"required":["attention_id"],"additionalProperties":false}`)
	inputSearchWorkflow = compact(`{"type":"object","properties":{
  "query":{"type":"string","maxLength":200,"description":"Case-insensitive terms matched against workflow ids, parameter names, operator labels and descriptions, and workflow card text. Omit to list all."},
  "available_only":{"type":"boolean","description":"Only workflows that loaded safely."},
  "limit":` + limitPropSchema + `,
  "cursor":{"type":"string","maxLength":512,"description":"next_cursor from the previous page of the same query."}},
 "additionalProperties":false}`)
	inputListWorkflows = compact(`{"type":"object","properties":{
  "limit":` + limitPropSchema + `,
  "cursor":{"type":"string","maxLength":512,"description":"next_cursor from the previous page."}},
 "additionalProperties":false}`)
	inputListAttention = compact(`{"type":"object","properties":{
  "limit":` + limitPropSchema + `,
  "cursor":{"type":"string","maxLength":512,"description":"next_cursor from the previous page: the next page starts after the last item that page returned, however the queue changed since."}},
 "additionalProperties":false}`)
)

const (
	limitPropSchema = `{"type":"integer","minimum":1,"maximum":500,"description":"Page size, default 50."}`
	urlPropSchema   = `{"type":"string","description":"Optional target application URL (http or https). Accepted only because the operator started this server with --allow-url-override."}`
	idemPropSchema  = `{"type":"string","minLength":16,"maxLength":200,"pattern":"^[A-Za-z0-9._:-]{16,200}$","description":"Optional retry key. Reuse it only to retry this exact call; the retry returns the original run and starts nothing new. Never put personal data in it."}`
)

// runToolInput builds the per-workflow run schema: declared parameters
// (by wire name) in declared order, then url (override only), then
// idempotency_key.
func runToolInput(params []param, urlOverride, syntheticDefaults bool) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for _, p := range params {
		b.WriteString(jstr(p.wire) + `:` + p.schema() + `,`)
	}
	if urlOverride {
		b.WriteString(`"url":` + urlPropSchema + `,`)
	}
	b.WriteString(`"idempotency_key":` + idemPropSchema + `},"required":[`)
	if !syntheticDefaults {
		sorted := make([]string, len(params))
		for i, p := range params {
			sorted[i] = p.wire
		}
		slices.Sort(sorted)
		for i, p := range sorted {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(jstr(p))
		}
	}
	b.WriteString(`],"additionalProperties":false}`)
	return compact(b.String())
}

// runWorkflowInput is run_workflow's schema (catalog mode).
func runWorkflowInput(urlOverride bool) json.RawMessage {
	s := `{"type":"object","properties":{
  "workflow_id":{"type":"string","description":"Opaque id from search_workflows, or the workflow's card name."},
  "params":{"type":"object","additionalProperties":{"type":["string","number"]},"description":"Values for the workflow's declared parameters, by name, each of the type and format search_workflows and get_workflow give it. Every declared parameter is required unless the operator enabled synthetic recorded defaults."},`
	if urlOverride {
		s += `"url":` + urlPropSchema + `,`
	}
	s += `"idempotency_key":` + idemPropSchema + `},
 "required":["workflow_id","params"],"additionalProperties":false}`
	return compact(s)
}

// resolveSchema resolves a schema literal for validation. A schema that does
// not resolve is a programmer error.
func resolveSchema(raw json.RawMessage) *jsonschema.Resolved {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		panic(fmt.Sprintf("serve: schema does not parse: %v", err))
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("serve: schema does not resolve: %v", err))
	}
	return r
}

// validates reports whether the JSON document data validates against r.
func validates(r *jsonschema.Resolved, data []byte) bool {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return false
	}
	return r.Validate(v) == nil
}

// sandboxProps are the sandbox mark's properties (sandbox.go).
var sandboxProps = `
  "sandbox":{"const":true},
  "sandbox_case":{"enum":` + func() string {
	names := make([]string, len(sandboxCases))
	for i, c := range sandboxCases {
		names[i] = c.name
	}
	return enumOf(names)
}() + `},
  "sandbox_engine":{"enum":` + enumOf(sandboxEngines) + `}`

// sandboxSchema is a run result schema with the sandbox mark appended to
// its properties, required when required is true.
func sandboxSchema(schema string, required bool) string {
	const props, req = "},\n \"required\":[", "],\n \"additionalProperties\":false}"
	i := strings.LastIndex(schema, props)
	j := strings.LastIndex(schema, req)
	if i < 0 || j < i {
		panic("serve: a run schema without its properties and required list")
	}
	out := schema[:i] + "," + sandboxProps + schema[i:j]
	if required {
		out += `,"sandbox","sandbox_case","sandbox_engine"`
	}
	return out + schema[j:]
}

// sandboxFailureSchema is a sandbox run tool's failure envelope: a run
// tool's, plus the sandbox mark (sandbox_case absent when no workflow is
// known).
var sandboxFailureSchema = func() string {
	s := sandboxSchema(strings.Replace(runFailureSchema, `},
 "required":["error"],"additionalProperties":false}`, `},
 "required":["error"],
 "additionalProperties":false}`, 1), false)
	return strings.Replace(s, `"required":["error"],`, `"required":["error","sandbox","sandbox_engine"],`, 1)
}()
