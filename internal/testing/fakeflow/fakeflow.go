// Package fakeflow is a fake `openadapt-flow` for tests. It plays every exit
// code and report shape of docs/runs.md without running anything:
// the report, exit code, output, timing and failure modes come from
// FAKE_FLOW_* environment variables. It records what it received (argv,
// environment, parameters file) so tests can assert on it.
//
// # Getting an executable
//
// Three ways, all giving a program whose base name is [Name]:
//   - cmd tests: testscript.Main registers "openadapt-flow": fakeflow.Main
//     (cmd/script_test.go), so scripts and tests of package cmd find it on
//     PATH;
//   - other packages (recommended): call [RunIfInvoked] first in TestMain,
//     then [Install] returns the path of an `openadapt-flow` that re-executes
//     the test binary (a symlink, or a copy where symlinks fail);
//   - [Build] runs `go build` of ./internal/testing/fakeflow/cmd/fakeflow into a
//     temporary directory (no TestMain needed; costs a link per call).
//
// # Configuration
//
// Every knob is read from FAKE_FLOW_<KNOB>, or, when that is unset or empty,
// from OPENADAPT_FAKE_FLOW_<KNOB>. The second spelling passes serve's child
// environment allowlist (its OPENADAPT_ prefix), so a test can configure the
// fake through a real `serve` without --pass-env.
//
//	MODE            run: "" (normal), hang, hang-ignore-term, hang-grandchild,
//	                leave-grandchild (a normal run that leaves a
//	                SIGTERM-ignoring grandchild behind), crash,
//	                report-symlink, report-huge, report-malformed,
//	                report-array, report-dir, no-run-dir;
//	                emit-skill: ok, exit1, two-dirs, no-bundle, alter-copy, hang;
//	                certify: "" or hang.
//	READY           a FIFO that hang modes (run and emit-skill) write one
//	                byte to once in place
//	REFUSE          a governed refusal (refuse.go): print Flow's refusal on
//	                stdout and exit 2 without a report; a comma-separated
//	                list of gate ids (execution_profile, certification,
//	                identity_coverage, effect_coverage, approval_fallback,
//	                interstitial_admission, encryption, manifest_integrity,
//	                or any other word for a gate Flow does not have) or one
//	                of load, unknown_profile, encryption_profile, surface,
//	                citrix (Flow's one-line refusals before its gate)
//	EXIT            exit code of a normal run (default 0)
//	REPORT          report to write into --run-dir: a file path, or a name
//	                resolved as $REPORTS_DIR/<name>/report.json
//	REPORTS_DIR     see REPORT (e.g. testdata/flow/reports)
//	REPORT_JSON     inline report body (wins over REPORT)
//	STDOUT, STDERR  text printed before exiting
//	OUTPUT_BYTES    also write this many bytes to stdout and to stderr
//	SLEEP           Go duration to wait before finishing (slow run)
//	RECORD          append one JSON line per invocation to this file: see
//	                [Invocation]
//	PIDFILE         hang-grandchild and leave-grandchild write
//	                "<leader pid> <grandchild pid>\n"
//	SIGNAL          crash: the signal number to die by (default 9)
//	SCENARIO_PARAM  name of a parameter whose value (read from the params
//	                file) overrides knobs for this run only, as
//	                "exit=1;report=standard-halted;sleep=50ms;mode=hang";
//	                this gives concurrent runs distinct outcomes
//	SKILL           emit-skill: a skill folder whose SKILL.md is copied; the
//	                folder's base name is the emitted slug (default
//	                "workflow" with a generated SKILL.md)
//	CERTIFY_EXIT    certify exit code (default 0)
//	CERTIFY_STDOUT  certify output
//	VERSION         `--version` prints "openadapt-flow VERSION" (unset: an
//	                invalid-choice usage error, exit 2)
//
// A normal run creates --run-dir (mode 0700, like Flow), sleeps, prints,
// writes the report (mode 0600) if one is configured, and exits with EXIT.
// The hang modes write the report first, so a test can prove that a report
// written before a timeout is never trusted.
package fakeflow

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Name is the executable name of the fake.
const Name = "openadapt-flow"

// Invocation is one line of the RECORD file.
type Invocation struct {
	// Argv is os.Args with Argv[0] replaced by its base name.
	Argv []string `json:"argv"`
	// Env is the sorted environment the fake received.
	Env []string `json:"env"`
	// Dir is the working directory.
	Dir string `json:"dir"`
	// RunDir and ParamsFile are the values of --run-dir and --params-file.
	RunDir     string `json:"run_dir,omitempty"`
	ParamsFile string `json:"params_file,omitempty"`
	// Params is the parsed parameters file (nil when absent or invalid);
	// ParamsMode its permission bits in octal, e.g. "0600".
	Params     map[string]any `json:"params,omitempty"`
	ParamsMode string         `json:"params_mode,omitempty"`
	// StdinNull: stdin is the null device (it is never read).
	StdinNull bool `json:"stdin_null"`
	PID       int  `json:"pid"`
	PGID      int  `json:"pgid"`
}

// ReadInvocations parses a RECORD file. A missing file gives no invocations.
func ReadInvocations(path string) ([]Invocation, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Invocation
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var inv Invocation
		if err := json.Unmarshal([]byte(line), &inv); err != nil {
			return nil, fmt.Errorf("fakeflow: record line: %w", err)
		}
		out = append(out, inv)
	}
	return out, nil
}

// knobs holds the configuration, with scenario overrides applied.
type knobs map[string]string

func loadKnobs() knobs {
	k := knobs{}
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if rest, ok := strings.CutPrefix(name, "OPENADAPT_FAKE_FLOW_"); ok {
			if _, set := k[rest]; !set {
				k[rest] = val
			}
		}
	}
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		if rest, ok := strings.CutPrefix(name, "FAKE_FLOW_"); ok && val != "" {
			k[rest] = val
		}
	}
	return k
}

// override applies "k=v;k=v" to the knobs (keys are case-insensitive).
func (k knobs) override(spec string) {
	for _, part := range strings.Split(spec, ";") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && name != "" {
			k[strings.ToUpper(name)] = val
		}
	}
}

// Main runs the fake with os.Args and returns the exit code.
func Main() int {
	k := loadKnobs()
	args := os.Args[1:]
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: openadapt-flow {run,certify,emit-skill} ...")
		return 2
	}
	switch args[0] {
	case "run":
		return run(k, args[1:])
	case "certify":
		return certify(k, args[1:])
	case "emit-skill":
		return emitSkill(k, args[1:])
	case "--version":
		// Only with VERSION set (doctor's tests rely on a fake without
		// --version): Flow's own format (__main__.py:4767), which serve
		// compares with the helper's hello under --flow-python
		// (docs/helper.md, Startup).
		if v := k["VERSION"]; v != "" {
			fmt.Println("openadapt-flow " + v)
			return 0
		}
	case "grandchild":
		// The grandchild of hang-grandchild: ignore SIGTERM, live forever.
		ignoreTerm()
		sleepForever()
	}
	fmt.Fprintf(os.Stderr, "usage: openadapt-flow: invalid choice\n")
	return 2
}

// flagValue returns the value after flag in args.
func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(args[i], flag+"="); ok {
			return v
		}
	}
	return ""
}

func record(k knobs, runDir, paramsFile string, params map[string]any, mode string) {
	path := k["RECORD"]
	if path == "" {
		return
	}
	env := os.Environ()
	sort.Strings(env)
	wd, _ := os.Getwd()
	argv := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	stdinNull := false
	if a, err := os.Stdin.Stat(); err == nil {
		if b, err := os.Stat(os.DevNull); err == nil {
			stdinNull = os.SameFile(a, b)
		}
	}
	inv := Invocation{
		Argv: argv, Env: env, Dir: wd, RunDir: runDir, ParamsFile: paramsFile,
		Params: params, ParamsMode: mode, StdinNull: stdinNull,
		PID: os.Getpid(), PGID: getpgid(),
	}
	line, _ := json.Marshal(inv)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow: record:", err)
		return
	}
	defer f.Close()
	// One write call per line: O_APPEND keeps concurrent lines whole.
	_, _ = f.Write(append(line, '\n'))
}

func readParams(path string) (map[string]any, string) {
	if path == "" {
		return nil, ""
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, ""
	}
	mode := fmt.Sprintf("%04o", fi.Mode().Perm())
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, mode
	}
	var p map[string]any
	if json.Unmarshal(data, &p) != nil {
		return nil, mode
	}
	return p, mode
}

func run(k knobs, args []string) int {
	runDir := flagValue(args, "--run-dir")
	paramsFile := flagValue(args, "--params-file")
	params, mode := readParams(paramsFile)
	if name := k["SCENARIO_PARAM"]; name != "" {
		if v, ok := params[name].(string); ok {
			k.override(v)
		}
	}
	record(k, runDir, paramsFile, params, mode)
	if runDir == "" {
		fmt.Fprintln(os.Stderr, "usage: openadapt-flow run: --run-dir is required by this fake")
		return 2
	}
	if k["MODE"] != "no-run-dir" {
		if err := os.MkdirAll(runDir, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
	}
	if k["MODE"] == "leave-grandchild" {
		if code := spawnGrandchild(k); code != 0 {
			return code
		}
	}
	if d, err := time.ParseDuration(k["SLEEP"]); err == nil && d > 0 {
		time.Sleep(d)
	}
	output(k)
	if spec := k["REFUSE"]; spec != "" {
		writeRefusal(os.Stdout, spec)
		return 2
	}
	report := filepath.Join(runDir, "report.json")
	body, err := reportBody(k)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow:", err)
		return 1
	}
	switch k["MODE"] {
	case "hang", "hang-ignore-term", "hang-grandchild":
		if body != nil {
			_ = os.WriteFile(report, body, 0o600)
		}
		return hang(k)
	case "crash":
		if body != nil {
			_ = os.WriteFile(report, body, 0o600)
		}
		sig, _ := strconv.Atoi(k["SIGNAL"])
		if sig == 0 {
			sig = 9
		}
		die(sig)
		return 1
	case "report-symlink":
		target := filepath.Join(runDir, "real-report.json")
		if body == nil {
			body = []byte(`{"success": true}`)
		}
		_ = os.WriteFile(target, body, 0o600)
		if err := os.Symlink(target, report); err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
	case "report-huge":
		if err := writeHuge(report); err != nil {
			fmt.Fprintln(os.Stderr, "fakeflow:", err)
			return 1
		}
	case "report-malformed":
		_ = os.WriteFile(report, []byte(`{"success": tru`), 0o600)
	case "report-array":
		_ = os.WriteFile(report, []byte(`[{"success": true}]`), 0o600)
	case "report-dir":
		_ = os.MkdirAll(report, 0o700)
	default:
		if body != nil {
			if err := writeAtomic(report, body); err != nil {
				fmt.Fprintln(os.Stderr, "fakeflow:", err)
				return 1
			}
		}
	}
	code, _ := strconv.Atoi(k["EXIT"])
	return code
}

// reportBody returns the configured report, or nil for none.
func reportBody(k knobs) ([]byte, error) {
	if s := k["REPORT_JSON"]; s != "" {
		return []byte(s), nil
	}
	src := k["REPORT"]
	if src == "" {
		return nil, nil
	}
	if !strings.ContainsRune(src, filepath.Separator) && k["REPORTS_DIR"] != "" {
		src = filepath.Join(k["REPORTS_DIR"], src, "report.json")
	}
	return os.ReadFile(src)
}

// writeAtomic writes like Flow: a temp file in the same folder, mode 0600,
// then a rename.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// writeHuge writes a valid JSON object just over 16 MiB.
func writeHuge(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.WriteString(f, `{"success": true, "padding": "`); err != nil {
		return err
	}
	chunk := []byte(strings.Repeat("x", 64<<10))
	for i := 0; i < (16<<20)/len(chunk)+1; i++ {
		if _, err := f.Write(chunk); err != nil {
			return err
		}
	}
	_, err = io.WriteString(f, `"}`)
	return err
}

func output(k knobs) {
	if s := k["STDOUT"]; s != "" {
		fmt.Fprint(os.Stdout, s)
	}
	if s := k["STDERR"]; s != "" {
		fmt.Fprint(os.Stderr, s)
	}
	if n, err := strconv.ParseInt(k["OUTPUT_BYTES"], 10, 64); err == nil && n > 0 {
		line := []byte(strings.Repeat("flow output line ", 60) + "\n")
		for _, w := range []io.Writer{os.Stdout, os.Stderr} {
			left := n
			for left > 0 {
				b := line
				if int64(len(b)) > left {
					b = b[:left]
				}
				if _, err := w.Write(b); err != nil {
					break
				}
				left -= int64(len(b))
			}
		}
	}
}

func hang(k knobs) int {
	switch k["MODE"] {
	case "hang-ignore-term":
		ignoreTerm()
	case "hang-grandchild":
		ignoreTerm()
		if code := spawnGrandchild(k); code != 0 {
			return code
		}
	}
	signalReady(k)
	return sleepForever()
}

// signalReady writes one byte to the FIFO named by the READY knob once the
// hang mode is in place (signals ignored, grandchild started), so a test can
// wait for that exact point instead of sleeping. Opening the FIFO blocks
// until the test opens it for reading.
func signalReady(k knobs) {
	if p := k["READY"]; p != "" {
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			_, _ = f.Write([]byte{1})
			_ = f.Close()
		}
	}
}

// spawnGrandchild starts a grandchild in the fake's process group that
// ignores SIGTERM and lives until killed, and writes "<pid> <grandchild>"
// to PIDFILE. argv[0] keeps the fake's name so a testscript or re-exec
// binary dispatches to Main again.
func spawnGrandchild(k knobs) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow:", err)
		return 1
	}
	gc := &exec.Cmd{Path: exe, Args: []string{Name, "grandchild"}, Env: os.Environ()}
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "fakeflow:", err)
		return 1
	}
	if p := k["PIDFILE"]; p != "" {
		_ = writeAtomic(p, []byte(fmt.Sprintf("%d %d\n", os.Getpid(), gc.Process.Pid)))
	}
	return 0
}

func certify(k knobs, args []string) int {
	record(k, "", "", nil, "")
	if k["MODE"] == "hang" {
		sleepForever()
	}
	fmt.Fprint(os.Stdout, k["CERTIFY_STDOUT"])
	code, _ := strconv.Atoi(k["CERTIFY_EXIT"])
	return code
}

// sleepForever blocks until the process is killed. (A bare select{} would
// let the Go runtime exit 2 with "all goroutines are asleep".)
func sleepForever() int {
	for {
		time.Sleep(time.Hour)
	}
}
