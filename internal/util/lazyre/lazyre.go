// Package lazyre compiles regular expressions on first use instead of at
// package init: start-up of every command pays only for what it matches
// (this project's own package init stays under 1 ms in total).
package lazyre

import (
	"regexp"
	"sync"
)

// New returns a function that compiles expr once, on its first call, and
// returns the same *regexp.Regexp afterwards. Like regexp.MustCompile it
// panics on an invalid expression (at first use; the package tests call
// every one).
func New(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
