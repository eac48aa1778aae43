//go:build !unix

package main

// statWalk is not implemented off unix (the stat walk measured is the one
// serve uses on Linux and macOS).
func statWalk(string) int { return -1 }
