// Package fakehelper is a Go stand-in for the Flow-side helper program of
// docs/helper.md, used by tests of internal/flow/flowhelper and its callers
// the way internal/testing/fakeflow stands in for openadapt-flow.
//
// The fake is the test binary itself under the name "python3" ([Install]):
// TestMain calls [RunIfInvoked] first. Started by flowhelper as
// `python3 [ARG] -B <dir>/flow_helper.py --in-fd 4 --out-fd 5`, it checks
// that the staged script is byte-identical to the embedded program, then
// speaks the protocol on fds 4/5 with plausible defaults for every op
// (hello, service.open, deployment.check, attended.act/replay/reconcile,
// authoring.probe, close). Knobs, all in the environment (OPENADAPT_ names
// pass the child allowlist):
//
//   - OPENADAPT_FAKE_HELPER_SCRIPT: a file of JSON-lines rules
//     {op, match?, reply?|error?, delay_ms?, then?, once?}; the first
//     matching rule answers. then ∈ crash hang exit:N garbage oversize
//     dup-id wrong-id partial-frame stdout:TEXT stderr:TEXT.
//   - OPENADAPT_FAKE_HELPER_MODE: comma-separated no-hello,
//     hello-version=V, hello-sha=HEX, python=V, operator=NAME, ignore-term,
//     leak-pipe, print-stdout, protocol=N, eof-waits-for-signal (on EOF
//     stay up to 20 s for a signal: parent-death tests).
//   - OPENADAPT_FAKE_HELPER_RECORD: a directory; each start writes
//     start-<pid>.json (argv, env, cwd, kind of fds 0–9, parent pid) and
//     appends every request to requests.jsonl and every signal to
//     signals.jsonl.
package fakehelper
