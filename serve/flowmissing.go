package serve

import (
	"context"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/tutorial"
)

// Missing Flow (docs/mcp.md "Startup"): a server whose flags need Flow
// (run tools, attended actions, the tutorial) still starts when the Flow
// command is not installed, so its host shows a working server instead of
// a failed connection. Every tool that needs Flow answers flow_not_found,
// whose recovery names the program and the fix; the banner says the same.
// Authoring is the exception: it fails closed at startup.

// missingFlow are the stand-ins of the features whose helper could not
// start because the Flow command is not installed.
type missingFlow struct {
	// tutorial: the tutorial was asked for (its workflow cannot be
	// prepared); with --allow-run run_local_quickstart answers
	// flow_not_found.
	tutorial bool
	allowRun bool
	// attended: --allow-attended-actions was asked for; Reject, Teach and
	// Escalate answer flow_not_found (attention.go).
	attended bool
}

// banner is the warning line of a server that did not find the Flow
// command: what fails, and the fix.
func (m *missingFlow) banner(runTools bool) string {
	var what []string
	if runTools || m.runQuickstart() {
		what = append(what, "run tools")
	}
	if m != nil && m.attended {
		what = append(what, "attended actions")
	}
	if len(what) == 0 {
		what = append(what, "run tools")
	}
	return "openadapt-flow was not found; " + strings.Join(what, " and ") + " will fail with flow_not_found" +
		"; install openadapt-flow so that it is on PATH, or pass --flow-cli (the Flow command) or --flow-python (the Python interpreter of a Flow install)\n"
}

func (m *missingFlow) runQuickstart() bool { return m != nil && m.tutorial && m.allowRun }

// register adds run_local_quickstart's stand-in (the tutorial with
// --allow-run): the same name and input, answering flow_not_found with the
// decision fields of a run Flow never started. nil-safe.
func (m *missingFlow) register(reg *registry, runs *runTools) {
	if !m.runQuickstart() {
		return
	}
	reg.add(toolDef{name: tutorial.ToolName, title: "Run the local quickstart", desc: quickstartDescription(-1),
		input: quickstartInput, success: runOutcomeSchema(runs.opts.AllowProtectedExport), run: true}, func(_ context.Context, c *toolCall) (any, *failure) {
		if f := runs.refuseURL(c.args); f != nil {
			return nil, f
		}
		for k := range c.args {
			if k != "idempotency_key" {
				return nil, fail(CodeInvalidArguments)
			}
		}
		return nil, fail(CodeFlowNotFound)
	})
}
