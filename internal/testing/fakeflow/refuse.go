package fakeflow

import (
	"fmt"
	"io"
	"strings"
)

// A governed refusal as Flow 1.32 prints it on stdout before it exits 2
// (docs/runs.md "Failed checks").
//
// Provenance. The shapes below were read (never copied) from Flow's public
// source, github.com/OpenAdaptAI/openadapt-flow at commit
// d1b054c718d60465fb8a2e1853e6a84c7f26dec2 ("chore: release 1.32.0"):
// openadapt_flow/run_gate.py (the gate ids and titles, GateResult.render,
// RunGateReport.render), openadapt_flow/__main__.py (the run command prints
// the rendered report, or a one-line "run REFUSED: …" refusal, on stdout
// and returns 2) and openadapt_flow/surface_selection.py (the surface
// refusal). TestRefusalReportShape pins the output.

// gateOrder is Flow's gate ids in the order its report renders them, with
// each gate's title.
var gateOrder = []struct{ id, title string }{
	{"execution_profile", "Execution profile"},
	{"certification", "Certification passed"},
	{"identity_coverage", "Identity coverage"},
	{"effect_coverage", "Effect coverage"},
	{"approval_fallback", "Approval fallback"},
	{"interstitial_admission", "Interstitial admission"},
	{"encryption", "Encrypted bundle"},
	{"manifest_integrity", "Sealed manifest + version pin"},
}

// preGateRefusals are the one-line refusals Flow prints instead of a gate
// report, by the name the REFUSE knob gives them.
var preGateRefusals = map[string]string{
	"load":               "run REFUSED: bundle could not be loaded safely. Verify the bundle path and integrity; for a sealed bundle, set OPENADAPT_BUNDLE_KEY. Nothing was executed.",
	"unknown_profile":    "run REFUSED: unknown execution profile 'fake'; expected one of: demo, standard, regulated. Nothing was executed.",
	"encryption_profile": "run REFUSED: the standard profile requires encrypted bundles; --allow-unencrypted cannot weaken a named profile. Select Standard or Demo only when the qualified storage boundary protects plaintext artifacts. Nothing was executed.",
	"surface":            "run REFUSED: the standard profile requires an explicit execution surface; there is no implicit browser default in production. Pass --backend with one of: web, windows, macos, linux, rdp, citrix (or set backend.kind in --config). Each surface has an equivalent first-workflow path; see docs/SURFACES.md. Nothing was executed.",
	"citrix":             "run REFUSED: governed Citrix execution requires a stable current-frame readiness marker before any action. Set backend.rdp_readiness_text in --config or pass --rdp-readiness-text. Nothing was executed.",
}

// refusalDetail is the detail the fake prints for a refused gate. It
// carries a planted secret, as Flow's detail may carry recorded values:
// nothing of it may reach a result, a log or an error.
const refusalDetail = "SECRET-FLOW-DETAIL-4711 (patient Jane Q. Doe)"

// writeRefusal prints the refusal the REFUSE knob names: a comma-separated
// list of gate ids (a gate report with those gates refused and the others
// passed), or one name of preGateRefusals. An unknown gate id prints a
// refused gate with that id as its title (a gate a later Flow might add).
func writeRefusal(w io.Writer, spec string) {
	if line, ok := preGateRefusals[spec]; ok {
		fmt.Fprintln(w, line)
		return
	}
	refused := map[string]bool{}
	var extra []string
	for _, id := range strings.Split(spec, ",") {
		id = strings.TrimSpace(id)
		known := false
		for _, g := range gateOrder {
			known = known || g.id == id
		}
		if !known && id != "" {
			extra = append(extra, id)
		}
		refused[id] = true
	}
	fmt.Fprintln(w, "REFUSE: workflow 'Fake Workflow' under 'standard' profile vs policy 'clinical-write'")
	var names []string
	for _, g := range gateOrder {
		if refused[g.id] {
			fmt.Fprintf(w, "  [REFUSE] %s: %s\n", g.title, refusalDetail)
			fmt.Fprintln(w, "         steps: s0003, s0004")
			names = append(names, g.title)
		} else {
			fmt.Fprintf(w, "  [PASS] %s: satisfied\n", g.title)
		}
	}
	for _, t := range extra {
		fmt.Fprintf(w, "  [REFUSE] %s: %s\n", t, refusalDetail)
		names = append(names, t)
	}
	fmt.Fprintf(w, "  -> RUN REFUSED (fail-closed): %s. Nothing was executed.\n", strings.Join(names, ", "))
}
