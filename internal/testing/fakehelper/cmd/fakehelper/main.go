//go:build unix

// Command fakehelper is the fake Flow-side helper of package fakehelper as
// a standalone program (see fakehelper.BuildShared).
package main

import (
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

func main() { os.Exit(fakehelper.Main()) }
