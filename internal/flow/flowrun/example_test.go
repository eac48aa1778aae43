package flowrun_test

import (
	"fmt"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
)

// A production-eligible VERIFIED report is never success for the local
// agent: at exit 0 it is error with the unsigned-production reason and
// effect_verified; at any other exit it is an inconsistent exit.
func ExampleClassifyExit() {
	report := []byte(`{"success": true, "execution_outcome": "VERIFIED",
		"execution_profile": "standard", "production_eligible": true}`)
	fmt.Printf("%+v\n", flowrun.ClassifyExit(0, flowrun.ReportPresent, report))
	fmt.Printf("%+v\n", flowrun.ClassifyExit(1, flowrun.ReportPresent, report))
	fmt.Printf("%+v\n", flowrun.ClassifyExit(1, flowrun.ReportAbsent, nil))
	fmt.Printf("%+v\n", flowrun.ClassifyExit(2, flowrun.ReportPresent, report))
	// Output:
	// {Status:error Outcome:VERIFIED Reason:unsigned_production_success EffectVerified:true}
	// {Status:error Outcome:VERIFIED Reason:inconsistent_exit EffectVerified:false}
	// {Status:halt Outcome: Reason:no_report EffectVerified:false}
	// {Status:refused Outcome: Reason: EffectVerified:false}
}

// The child environment is an allowlist plus --pass-env opt-ins.
func ExampleChildEnv() {
	server := []string{"PATH=/usr/bin", "AWS_SECRET_ACCESS_KEY=x", "OPENADAPT_BUNDLE_KEY=k",
		"HTTPS_PROXY=http://proxy", "PYTHONPATH=/tmp/evil"}
	fmt.Println(flowrun.ChildEnv(server, []string{"HTTPS_PROXY"}))
	// Output: [PATH=/usr/bin OPENADAPT_BUNDLE_KEY=k HTTPS_PROXY=http://proxy]
}

// The argv of one run: parameter values are never in it.
func ExampleRequest_Args() {
	req := flowrun.Request{
		Flow:      []string{"openadapt-flow"},
		BundleDir: "/bundles/triage",
		RunsDir:   "/srv/runs",
		RunID:     "run-0123456789abcdef01234567",
		Params:    map[string]string{"note": "never in argv"},
		URL:       "https://emr.example",
		ExtraArgs: []string{"--profile", "demo"},
	}
	fmt.Println(req.Args("/srv/runs/.openadapt-agent/tmp/params-run-0123456789abcdef01234567.json"))
	// Output: [openadapt-flow run /bundles/triage --run-dir /srv/runs/run-0123456789abcdef01234567 --params-file /srv/runs/.openadapt-agent/tmp/params-run-0123456789abcdef01234567.json --url https://emr.example --profile demo]
}
