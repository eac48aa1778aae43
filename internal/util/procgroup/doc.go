// Package procgroup is a child process together with everything it starts:
// a process group on Unix (the child leads it; Linux also asks the kernel for
// SIGTERM when the parent dies), a kill-on-close job object on Windows. Flow
// runs (internal/flow/flowrun, docs/runs.md) and the Flow-side helper
// (internal/flow/flowhelper, docs/helper.md) both start their child
// this way, so the rule lives here once.
//
// Start the command with [SysProcAttr] (callers may add fields, e.g. the
// helper's inherited handles on Windows), then call [New] with the started
// process; [Group.Close] releases what New acquired.
package procgroup
