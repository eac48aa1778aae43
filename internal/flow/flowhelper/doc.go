// Package flowhelper runs the Flow-side helper of flow-helper.md: one
// long-lived Python program, embedded in this binary ([Program]), started
// with Flow's own interpreter and spoken to in JSON lines on its own pipes.
//
// It is the only way this project reaches Flow's Python-only contracts:
// attended decisions through AttendedActionService / execute_attended_action
// (which own the HMAC-chained external journal), the read-only deployment
// check, the authoring probe and, later, the tutorial's MockMed server.
// Flow stays the authority: the helper never touches a backend, page or
// replayer, and this package never reimplements a decision.
//
// Stable API: [FindPython], [Operator], [Start] (spawn + hello), the
// [Helper] methods (OpenService, CheckDeployment, Act, Replay, Reconcile,
// ProbeAuthoring, Close, Done), [*Error] for helper error frames and
// [*TransportError] (wrapping [ErrDead] or [ErrDeadline]) for a helper that
// died or hung. Nothing is retried automatically (flow-helper.md §2.9): a
// fresh helper would open a new browser and could not prove the old one's
// in-flight state.
//
// Later deliveries add their ops in their own files: tutorial.prepare
// (ops_tutorial.go, flow-helper.md §3.3) and the authoring.* session ops
// (ops_authoring.go, §12.2), each with a matching section in the Python
// program.
package flowhelper
