//go:build !unix

package tutorial

// oNoFollow is 0 where the OS has no O_NOFOLLOW; the state directory is the
// agent's own 0700 directory there.
const oNoFollow = 0
