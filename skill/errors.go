package skill

import (
	"errors"
	"fmt"
)

// The sentinel tree. Test with [errors.Is] at any granularity.
var (
	// ErrInvalid is the root of every "this is not a valid Agent Skill" error.
	ErrInvalid = errors.New("invalid skill")
	// ErrFrontmatter: SKILL.md bytes or frontmatter break a skill rule.
	ErrFrontmatter = fmt.Errorf("%w: frontmatter", ErrInvalid)
	// ErrName: the skill name breaks a naming rule.
	ErrName = fmt.Errorf("%w: name", ErrInvalid)
	// ErrDescription: the description breaks a rule.
	ErrDescription = fmt.Errorf("%w: description", ErrInvalid)
	// ErrLayout: the folder layout is wrong (no SKILL.md, no bundle/, an
	// unexpected Flow output layout, …).
	ErrLayout = fmt.Errorf("%w: layout", ErrInvalid)

	// ErrUnsafeArchive: an archive or a tree to pack holds something that is
	// refused (traversal, absolute path, duplicate, link, special file) or
	// exceeds a limit. The message names the limit or the rule hit.
	ErrUnsafeArchive = errors.New("unsafe archive")
	// ErrDigestMismatch: a recomputed digest differs from the recorded one.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrConflict: the destination holds a different skill.
	ErrConflict = errors.New("conflict")
	// ErrBundle: the bundle inside the skill failed verification. It also
	// wraps the bundle package's typed error.
	ErrBundle = errors.New("bundle refused")
)

// bundleError wraps both [ErrBundle] and the bundle package's error.
type bundleError struct {
	msg string
	err error
}

func (e *bundleError) Error() string   { return e.msg }
func (e *bundleError) Unwrap() []error { return []error{ErrBundle, e.err} }
