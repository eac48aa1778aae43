// Package workflowid owns the syntax of the opaque workflow ids serve
// publishes (docs/bundle.md, Workflow ids): a bundle's id, "workflow_" and 24
// lowercase hex digits (bundle.Bundle.ID), optionally "_N" for the N-th
// bundle with the same id across a server's roots (N ≥ 2 in practice, any
// positive integer without leading zeros in the syntax), or the tutorial's
// "local_quickstart". serve's schemas, its catalog and digest cache,
// the run records of internal/runstore and the --labels file all check ids
// here, so the rule is written once.
package workflowid

// Pattern is the JSON Schema pattern of every workflow id field; [Valid]
// accepts exactly the strings it matches (TestValidMatchesPattern).
const Pattern = `^(workflow_[0-9a-f]{24}(_[1-9][0-9]*)?|local_quickstart)$`

// Quickstart is the tutorial workflow's id.
const Quickstart = "local_quickstart"

const (
	prefix  = "workflow_"
	baseLen = len(prefix) + 24
)

// Valid reports whether id is a workflow id.
func Valid(id string) bool {
	if id == Quickstart {
		return true
	}
	if len(id) < baseLen || !ValidBase(id[:baseLen]) {
		return false
	}
	rest := id[baseLen:]
	if rest == "" {
		return true
	}
	if len(rest) < 2 || rest[0] != '_' || rest[1] < '1' || rest[1] > '9' {
		return false
	}
	for i := 2; i < len(rest); i++ {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return true
}

// ValidBase reports whether id is a bundle's own id: "workflow_" and 24
// lowercase hex digits, no suffix.
func ValidBase(id string) bool {
	if len(id) != baseLen || id[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < baseLen; i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
