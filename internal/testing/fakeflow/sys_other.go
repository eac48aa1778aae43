//go:build !unix

package fakeflow

import "os"

func ignoreTerm() {}

func getpgid() int { return 0 }

func die(int) { os.Exit(3) }
