// Package flowhelper runs the Flow-side helper (docs/helper.md): one
// long-lived Python program, embedded in this binary ([Program]), started
// with Flow's own interpreter and spoken to in JSON lines on its own pipes.
//
// It is the only way this project reaches Flow's Python-only contracts:
// attended decisions through AttendedActionService / execute_attended_action
// (which own the HMAC-chained external journal), the read-only deployment
// check, the tutorial's MockMed server and the authoring session. Flow stays
// the authority: the helper never touches a backend, page or replayer, and
// this package never reimplements a decision.
//
// Stable API: [Launch] (the one way to start a helper: child environment,
// Flow's Python, the recorded durable-authority database, spawn, hello, the
// run command's version), [Start] underneath it, [FindPython], [Operator],
// the [Helper] methods (OpenService, CheckDeployment, Act, Replay,
// Reconcile, PrepareTutorial, the authoring ops, Close, Done), [*Error] for
// helper error frames, [*TransportError] (wrapping [ErrDead] or
// [ErrDeadline]) for a helper that died or hung, and [*StartError] for a
// helper that did not start. Nothing is retried automatically: a fresh
// helper would open a new browser and could not prove the old one's
// in-flight state.
package flowhelper
