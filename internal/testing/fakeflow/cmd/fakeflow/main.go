// Command fakeflow is the fake openadapt-flow of package fakeflow as a
// standalone program (see fakeflow.Build).
package main

import (
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow"
)

func main() { os.Exit(fakeflow.Main()) }
