package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	"github.com/OpenAdaptAI/openadapt-agent/internal/authoring"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flowrun"
)

// IDAuthoring is the authoring check: whether the installed Flow provides
// openadapt_flow.authoring (serve --authoring, authoring connect).
const IDAuthoring = "authoring"

// AuthoringFunc checks authoring availability for the Flow command flowCLI.
// A hook, like [LedgerFunc], so tests need no Python.
type AuthoringFunc func(ctx context.Context, flowCLI string) Check

// AuthoringCheck starts the Flow helper with the Flow command's own Python
// (flow-helper.md §2.2) in a private temporary directory, runs
// authoring.probe and closes it. Authoring is optional, so a missing module
// is a warning, never a failure.
func AuthoringCheck(ctx context.Context, flowCLI string) Check {
	c := Check{ID: IDAuthoring, Status: Warn}
	words, err := flowrun.SplitCommand(flowCLI)
	if err != nil || len(words) == 0 {
		c.Message = "not checked: --flow-cli is not a command"
		return c
	}
	env := flowrun.ChildEnv(os.Environ(), nil)
	path := ""
	for _, kv := range env {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			path = kv[5:]
		}
	}
	interp, err := flowhelper.FindPython("", words[0], path)
	if err != nil {
		c.Message = "not checked: the Flow Python interpreter could not be determined from the Flow command"
		c.Fix = "serve --authoring and authoring connect take --flow-python PATH (the Python that runs Flow)"
		return c
	}
	tmp, err := os.MkdirTemp("", "openadapt-agent-doctor-")
	if err != nil {
		c.Message = "not checked: no private temporary directory"
		return c
	}
	defer os.RemoveAll(tmp)
	var id [6]byte
	_, _ = rand.Read(id[:])
	ok, v, err := authoring.Probe(ctx, authoring.OpenOptions{Interpreter: interp, StateDir: tmp, Instance: "doctor-" + hex.EncodeToString(id[:]), Env: env})
	var se *flowhelper.StartError
	switch {
	case errors.As(err, &se):
		c.Message = "not checked: " + se.Msg
	case err != nil:
		c.Message = "not checked: the Flow helper did not answer the authoring probe"
	case ok:
		c.Status = OK
		c.Message = "openadapt_flow.authoring is available with openadapt-flow " + flowhelper.CleanVersion(v) + ": serve --authoring and authoring connect can run"
	default:
		c.Message = "openadapt_flow.authoring is not available with openadapt-flow " + flowhelper.CleanVersion(v) + ": serve --authoring and authoring connect fail closed"
		c.Fix = "authoring needs a Flow release that ships openadapt_flow.authoring; everything else works without it"
	}
	return c
}
