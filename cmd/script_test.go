package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakeflow"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// TestMain lets the test binary double as the programs that scripts exec:
// testscript copies it into a bin/ folder on PATH under each name below.
// The fake Flow and fake helper are then shadowed on PATH by non-race
// builds (see sharedFakes).
func TestMain(m *testing.M) {
	testscript.Main(sharedFakes{m}, map[string]func(){
		"openadapt-agent": func() { os.Exit(Main()) },
		// The fake Flow (internal/testing/fakeflow): FAKE_FLOW_* picks its behaviour.
		"openadapt-flow": func() { os.Exit(fakeflow.Main()) },
		// The fake Flow-side helper (internal/testing/fakehelper), started
		// as `python3 -B <program> --in-fd 4 --out-fd 5`.
		fakehelper.Name: func() { os.Exit(fakehelper.Main()) },
	})
}

// sharedFakes runs the tests (testscript.Main calls Run only in the test
// process, after it has put its bin/ folder on PATH) with eight parallel
// tests (most wait on child processes) and with the fake Flow and fake
// helper built once without the race detector, ahead of bin/ on PATH: each
// fake start is then a small program instead of the race-instrumented test
// binary. A failed build leaves the test-binary copies in place.
type sharedFakes struct{ m *testing.M }

func (s sharedFakes) Run() int {
	testutil.Parallel(8)
	noRaceExitSleep()
	path := os.Getenv("PATH")
	flow, flowCleanup, err := fakeflow.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmd tests: the shared fake Flow did not build; scripts use the test binary:", err)
	} else {
		path = filepath.Dir(flow) + string(filepath.ListSeparator) + path
	}
	defer flowCleanup()
	helper, helperCleanup, err := fakehelper.BuildShared()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cmd tests: the shared fake helper did not build; scripts use the test binary:", err)
	} else {
		path = filepath.Dir(helper) + string(filepath.ListSeparator) + path
	}
	defer helperCleanup()
	os.Setenv("PATH", path)
	return s.m.Run()
}

// noRaceExitSleep sets atexit_sleep_ms=0 in GORACE (keeping any other
// option) for the children of these tests: a program built with -race that
// exits 0 otherwise sleeps 1 s first (the race detector's default, to catch
// races in goroutines still running), and every openadapt-agent a test
// starts is the race-built test binary when the tests run under -race. A
// race found in a child is still reported and still makes it exit 66.
// Children whose environment a test builds get it through childEnv.
func noRaceExitSleep() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms=") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// childEnv starts the environment of a child the test builds from scratch:
// PATH (testscript's bin/ and the shared fakes) and GORACE
// (noRaceExitSleep), then kv.
func childEnv(kv ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "GORACE=" + os.Getenv("GORACE")}, kv...)
}

// TestScript runs the CLI contract in testdata/script/*.txtar.
func TestScript(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "../testdata/script",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       testutil.Update(),
		Setup: func(env *testscript.Env) error {
			// Scripts see the repository's testdata as $TESTDATA.
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			env.Setenv("TESTDATA", wd+"/../testdata")
			env.Setenv("GORACE", os.Getenv("GORACE")) // noRaceExitSleep
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exits CODE PROG [ARGS...] runs PROG like exec and requires the
			// exact exit status CODE (exec and ! exec only tell zero from
			// non-zero). stdout and stderr are kept for the next assertions.
			"exits": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 2 {
					ts.Fatalf("usage: exits CODE PROG [ARGS...]")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("exits: bad CODE %q", args[0])
				}
				got := 0
				if err := ts.Exec(args[1], args[2:]...); err != nil {
					var ee *exec.ExitError
					if !errors.As(err, &ee) {
						ts.Fatalf("exits: %v", err)
					}
					got = ee.ExitCode()
				}
				if got != want {
					ts.Fatalf("%s exited %d, want %d", args[1], got, want)
				}
			},
			// ledger-gen DIR [MUTATION] writes a generated evidence root
			// signed with a test key (internal/testing/ledgergen) and sets
			// LEDGER_PIN to its signer-registry identity. MUTATION is one of
			// signature, expired, revoked.
			"ledger-gen": ledgerGenCmd,
			// sigstore-sign FILE DIR signs FILE keylessly with sigstore-go's
			// in-memory CA and writes DIR/ledger.sigstore.json and
			// DIR/trusted_root.json (no SCT: verify with --insecure-ignore-sct).
			"sigstore-sign": sigstoreSignCmd,
			// release-sign DIR KEY writes and signs DIR/checksums.txt
			// (cmd/release_script_test.go).
			"release-sign": releaseSignCmd,
			"mcp-call":     mcpCall,
			// run-id VAR RUNS_DIR sets VAR to the one recorded run id.
			"run-id": runIDCmd,
			"openadapt-agent-inproc": func(ts *testscript.TestScript, neg bool, args []string) {
				code := Run(context.Background(), args, nil, ts.Stdout(), ts.Stderr())
				if (code != 0) != neg {
					ts.Fatalf("openadapt-agent-inproc exited %d", code)
				}
			},
		},
	})
}
