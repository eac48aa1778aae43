// Package jsonoracle holds frozen copies of the JSON code that
// internal/util/pyjson replaced (bundle/json.go, bundle's content digest,
// ledger/parse.go and ledger's canonical writer, as of commit 9c94728). It is
// a differential oracle for tests and fuzzing only: never linked into the
// binary (cmd's deps test), never fixed or extended.
package jsonoracle
