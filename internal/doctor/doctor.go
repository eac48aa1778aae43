// Package doctor checks a local openadapt-agent setup and says, for every
// problem it finds, exactly what to do about it. It backs the `doctor`
// command.
//
// [Run] takes an [Env] (PATH lookups, home folder, clock, the Flow version
// probe) so that tests use fakes, and [Options] with the same defaults as
// `serve`. It returns a [Report]: one [Check] per aspect, each ok, warn or
// fail, with a one-line message and a fix. The report is stable: the order of
// checks and their ids do not change between runs.
//
// Privacy: messages and fixes describe structure (counts, opaque workflow
// ids, error classes), never protected data: no workflow names, intents,
// recorded values, report bodies, Flow output or the bundle key. The only
// paths that appear are the ones the operator passed (--bundles, --runs-dir,
// --ledger, --config, --flow-python), made absolute, Flow's interpreter, inside the registration snippets that must name
// them, and this binary's own path.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
)

// MediaType identifies the `doctor --json` document.
const MediaType = "application/vnd.openadapt-agent.doctor+json;version=1"

// Status is the verdict of one check.
type Status string

// The statuses. Only [Fail] makes `doctor` exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check ids, in report order. Agents add one "agent.<id>" entry each.
const (
	IDFlowCLI   = "flow_cli"
	IDBundles   = "bundles"
	IDBundleKey = "bundle_key"
	IDRunsDir   = "runs_dir"
	IDLedger    = "ledger"
	IDAgents    = "agents"
)

// Check is one line of the report.
type Check struct {
	ID      string `json:"id"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Fix says what to do; for agent entries it is the exact registration
	// command or config snippet. Empty only when there is nothing to do.
	Fix string `json:"fix"`
}

// Summary counts the checks by status.
type Summary struct {
	OK   int `json:"ok"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
}

// Report is the result of [Run] and the `doctor --json` document.
type Report struct {
	MediaType string  `json:"mediaType"`
	Version   string  `json:"version"`
	Summary   Summary `json:"summary"`
	Checks    []Check `json:"checks"`
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool { return r.Summary.Fail > 0 }

// Env is everything [Run] asks of the machine besides the file system under
// the folders it is given.
type Env struct {
	// Getenv reads one environment variable.
	Getenv func(string) string
	// Environ is the whole environment (os.Environ() form) the Flow
	// helper's is built from; nil means this process's.
	Environ []string
	// LookPath resolves a program name like exec.LookPath.
	LookPath func(string) (string, error)
	// Stat reports whether a path exists and is a folder (agent config
	// folders). Nil means os.Stat.
	Stat func(string) (os.FileInfo, error)
	// HomeDir is the user's home folder, "" when unknown.
	HomeDir string
	// DefaultRunsDir is serve's default --runs-dir, the per-user state
	// folder (internal/util/userdirs), "" when unknown.
	DefaultRunsDir string
	// WorkDir is the current folder; relative paths resolve against it.
	WorkDir string
	// Executable is this program's absolute path, "" when unknown. Snippets
	// use it unless it lives in a temporary folder (go run, tests).
	Executable string
	// TempDir is the system temporary folder (see Executable).
	TempDir string
	// Now is the clock.
	Now func() time.Time
	// FlowVersion runs the Flow command argv with --version and returns its
	// standard output. It is only called after LookPath found argv[0].
	FlowVersion func(ctx context.Context, argv []string) (string, error)
	// Ledger, if set, checks the admission ledger (see [LedgerFunc]).
	Ledger LedgerFunc
	// Helper, if set, runs the Flow-side helper checks: the interpreter,
	// the handshake, the deployment config and authoring (see
	// [HelperFunc]).
	Helper HelperFunc
}

// LedgerFunc checks the admission ledger at path ("" = the snapshot embedded
// in the binary) and returns the ledger check. It is a hook so that this
// package does not depend on how ledgers are verified.
type LedgerFunc func(ctx context.Context, path string, now time.Time) Check

// Options are the doctor flags, with the defaults of `serve`.
type Options struct {
	// Bundles is --bundles; "" means not given.
	Bundles string
	// RunsDir is --runs-dir; "" means serve's default, the per-user state
	// folder ([Env].DefaultRunsDir).
	RunsDir string
	// RunsDirSet reports that --runs-dir was given explicitly.
	RunsDirSet bool
	// Ledger is --ledger; "" means the embedded snapshot.
	Ledger string
	// FlowCLI is --flow-cli; "" means serve's default "openadapt-flow".
	FlowCLI string
	// FlowCLISet reports that --flow-cli was given explicitly.
	FlowCLISet bool
	// FlowPython is --flow-python; "" means from the Flow command.
	FlowPython string
	// Config is --config (the attended deployment config); "" means none.
	Config string
	// URL and Headed are serve's --url and --headed overrides of Config.
	URL    string
	Headed bool
}

// CatalogModeAdvisedAbove is the number of workflows above which serve's
// default per-workflow tool mode (a run tool per workflow in tools/list) is
// the wrong one and --tool-mode catalog the right one; serve's banner and
// list_workflows use it too (BENCHMARKS.md has the figures behind it).
const CatalogModeAdvisedAbove = 200

// errFlowVersion: the Flow command ran but did not exit 0.
var errFlowVersion = errors.New("flow --version did not succeed")

// MinFlowVersion is the Flow release this agent's contracts were written
// against: Flow 1.32.0.
const MinFlowVersion = "1.32.0"

// Run performs every check and returns the report. It never fails as a
// whole: each problem becomes a check.
func Run(ctx context.Context, env Env, opts Options, version string) *Report {
	env = withDefaults(env)
	if opts.RunsDir == "" {
		// serve's default runs folder: absolute, so it works
		// from any folder. Without a home folder it cannot be known.
		opts.RunsDir = env.DefaultRunsDir
		if opts.RunsDir == "" {
			opts.RunsDir = "/ABSOLUTE/PATH/TO/runs"
		}
	}
	if opts.FlowCLI == "" {
		opts.FlowCLI = flowrun.DefaultFlowCommand
	}
	r := &Report{MediaType: MediaType, Version: version}
	r.add(checkFlow(ctx, env, opts))
	bundles, bc := checkBundles(ctx, env, opts)
	r.add(bc)
	r.add(checkBundleKey(env, opts, bundles))
	r.add(checkRunsDir(env, opts))
	if env.Ledger != nil {
		r.add(env.Ledger(ctx, absFrom(env.WorkDir, opts.Ledger), env.Now()))
	}
	if env.Helper != nil {
		for _, c := range env.Helper(ctx, HelperOptions{FlowCLI: opts.FlowCLI, FlowPython: opts.FlowPython,
			Config: absFrom(env.WorkDir, opts.Config), URL: opts.URL, Headed: opts.Headed, Environ: env.Environ}) {
			r.add(c)
		}
	}
	for _, c := range checkAgents(env, opts) {
		r.add(c)
	}
	return r
}

func (r *Report) add(c Check) {
	r.Checks = append(r.Checks, c)
	switch c.Status {
	case OK:
		r.Summary.OK++
	case Warn:
		r.Summary.Warn++
	default:
		r.Summary.Fail++
	}
}

func withDefaults(env Env) Env {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.LookPath == nil {
		env.LookPath = func(string) (string, error) { return "", errors.New("not found") }
	}
	if env.Stat == nil {
		env.Stat = os.Stat
	}
	if env.Now == nil {
		env.Now = time.Now
	}
	return env
}

// absFrom makes p absolute against dir ("" stays "").
func absFrom(dir, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// versionPattern finds a version number in `--version` output.
var versionPattern = lazyre.New(`\b(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.-]+)?\b`)

func checkFlow(ctx context.Context, env Env, opts Options) Check {
	c := Check{ID: IDFlowCLI}
	argv, err := flowrun.SplitCommand(opts.FlowCLI)
	if err != nil {
		c.Status = Fail
		c.Message = "the --flow-cli value cannot be split into words (unterminated quote, trailing backslash or empty)"
		c.Fix = `quote --flow-cli like a shell command without expansions, for example --flow-cli "python3 -m openadapt_flow"`
		return c
	}
	if _, err := env.LookPath(argv[0]); err != nil {
		c.Status = Warn
		c.Message = "openadapt-flow was not found on PATH: serve still starts and its read tools work; run tools, attended actions and the tutorial will fail with flow_not_found, and --authoring will not start"
		c.Fix = "install openadapt-flow so that it is on PATH, or pass --flow-cli (the Flow command) or --flow-python (the Python interpreter of a Flow install), the same values serve gets"
		if opts.FlowCLISet {
			c.Status = Fail
			c.Message = "the --flow-cli command was not found: run tools, attended actions and the tutorial will fail with flow_not_found, and --authoring will not start"
			c.Fix = "pass --flow-cli a program on PATH or an absolute path to an executable file"
		}
		return c
	}
	if env.FlowVersion == nil {
		c.Status = OK
		c.Message = "Flow command found (version not checked)"
		return c
	}
	out, err := env.FlowVersion(ctx, argv)
	m := versionPattern().FindStringSubmatch(out)
	if err != nil || m == nil {
		c.Status = Warn
		c.Message = "Flow command found, but `--version` did not report a version"
		c.Fix = "check that the Flow command runs: " + strings.Join(quoteAll(argv), " ") + " --version"
		return c
	}
	v := m[0]
	if compareVersions(m, MinFlowVersion) < 0 {
		c.Status = Warn
		c.Message = fmt.Sprintf("openadapt-flow %s found; this agent expects %s or later", v, MinFlowVersion)
		c.Fix = "upgrade OpenAdapt Flow to " + MinFlowVersion + " or later"
		return c
	}
	c.Status = OK
	c.Message = fmt.Sprintf("openadapt-flow %s found", v)
	return c
}

// compareVersions compares the MAJOR.MINOR[.PATCH] groups of a
// versionPattern match with want ("1.32.0").
func compareVersions(m []string, want string) int {
	w := strings.Split(want, ".")
	for i := 0; i < 3; i++ {
		a, _ := strconv.Atoi(m[i+1])
		b := 0
		if i < len(w) {
			b, _ = strconv.Atoi(w[i])
		}
		if a != b {
			if a < b {
				return -1
			}
			return 1
		}
	}
	return 0
}

// bundleFixes says what to do about each failure class.
var bundleFixes = map[bundle.ErrorKind]string{
	bundle.KindContentDigestMismatch: "the bundle changed after openadapt-flow compiled or sealed it: export it again from Flow",
	bundle.KindAssetHashMismatch:     "a bundle file changed after openadapt-flow compiled or sealed it: export the bundle again from Flow",
	bundle.KindAssetMissing:          "a file the bundle manifest lists is missing: copy the whole bundle folder again",
	bundle.KindDecryptFailed:         "OPENADAPT_BUNDLE_KEY does not open this sealed bundle: set the passphrase it was sealed with",
	bundle.KindMissingKey:            "export OPENADAPT_BUNDLE_KEY (the sealing passphrase) in the environment the server starts in",
	bundle.KindInvalidJSON:           "workflow.json is not valid: export the bundle again from openadapt-flow",
	bundle.KindNotABundle:            "the folder has no readable workflow.json or workflow.json.enc: remove it or export the bundle again",
	bundle.KindUnsafePath:            "replace symbolic links in the bundles folder with real folders and files",
	bundle.KindKDFCostRejected:       "the sealed bundle asks for an excessive key-derivation cost: seal it again with openadapt-flow's defaults",
	bundle.KindUnreadable:            "a bundle file cannot be read by this user: fix its permissions (chmod u+r) or run as its owner",
}

// maxListed bounds how many failed bundles the message names.
const maxListed = 10

func checkBundles(ctx context.Context, env Env, opts Options) ([]*bundle.Bundle, Check) {
	c := Check{ID: IDBundles}
	if opts.Bundles == "" {
		c.Status = Warn
		c.Message = "no bundles folder given: serve needs --bundles DIR"
		c.Fix = "rerun with --bundles DIR, a bundle folder or a folder whose subfolders are bundles"
		return nil, c
	}
	// Full verification, as a run would require: doctor is run rarely, so
	// the cost of sealed bundles (one key derivation per file) is accepted.
	keyOpt := bundle.WithoutKey()
	if key := env.Getenv(bundle.KeyEnv); key != "" {
		keyOpt = bundle.WithKey(key)
	}
	bs, err := bundle.Discover(absFrom(env.WorkDir, opts.Bundles), keyOpt, bundle.WithContext(ctx))
	if err != nil {
		c.Status = Fail
		c.Message = "the --bundles folder does not exist, is not a folder or cannot be read"
		c.Fix = "pass an existing folder to --bundles"
		return nil, c
	}
	if len(bs) == 0 {
		c.Status = Warn
		c.Message = "no bundles found in the --bundles folder"
		c.Fix = "put bundle folders made by openadapt-flow (each with workflow.json or workflow.json.enc) in it, or pass the folder that holds them"
		return nil, c
	}
	var verified, legacy int
	var failed []string
	var fixes []string
	seenFix := map[bundle.ErrorKind]bool{}
	for _, b := range bs {
		switch b.Integrity {
		case bundle.Verified:
			verified++
		case bundle.LegacyUnverified:
			legacy++
		default:
			failed = append(failed, b.ID+" ("+string(b.ErrorKind)+")")
			if !seenFix[b.ErrorKind] {
				seenFix[b.ErrorKind] = true
				if f := bundleFixes[b.ErrorKind]; f != "" {
					fixes = append(fixes, string(b.ErrorKind)+": "+f)
				}
			}
		}
	}
	parts := []string{fmt.Sprintf("%d verified", verified)}
	if legacy > 0 {
		parts = append(parts, fmt.Sprintf("%d legacy (unverified)", legacy))
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", len(failed)))
	}
	c.Message = fmt.Sprintf("%d bundle(s): %s", len(bs), strings.Join(parts, ", "))
	switch {
	case len(failed) > 0:
		c.Status = Fail
		if len(failed) > maxListed {
			failed = append(failed[:maxListed], fmt.Sprintf("and %d more", len(failed)-maxListed))
		}
		c.Message += ": " + strings.Join(failed, ", ")
		c.Fix = strings.Join(fixes, "\n")
	case legacy > 0:
		c.Status = Warn
		c.Fix = "legacy bundles have no manifest and load without verification: compile them again with openadapt-flow"
	default:
		c.Status = OK
	}
	if len(bs) > CatalogModeAdvisedAbove {
		// serve's default per-workflow mode lists a tool per workflow.
		c.Message += fmt.Sprintf("; more than %d workflows: serve them with --tool-mode catalog", CatalogModeAdvisedAbove)
		fix := fmt.Sprintf("more than %d workflows: add --tool-mode catalog to serve (one search tool and one run tool instead of a tool per workflow)", CatalogModeAdvisedAbove)
		if c.Status == OK {
			c.Status = Warn
			c.Fix = fix
		} else {
			c.Fix += "\n" + fix
		}
	}
	return bs, c
}

func checkBundleKey(env Env, opts Options, bs []*bundle.Bundle) Check {
	c := Check{ID: IDBundleKey}
	keySet := env.Getenv(bundle.KeyEnv) != ""
	sealed, refused := 0, 0
	for _, b := range bs {
		if b.Encrypted {
			sealed++
			if b.ErrorKind == bundle.KindDecryptFailed {
				refused++
			}
		}
	}
	switch {
	case opts.Bundles == "":
		c.Status = OK
		c.Message = "not checked: no --bundles"
		if keySet {
			c.Message = "OPENADAPT_BUNDLE_KEY is set (value not shown); bundles not checked: no --bundles"
		}
	case sealed == 0:
		c.Status = OK
		c.Message = "no sealed bundles: OPENADAPT_BUNDLE_KEY is not needed"
	case !keySet:
		c.Status = Fail
		c.Message = fmt.Sprintf("%d sealed bundle(s), but OPENADAPT_BUNDLE_KEY is not set: they cannot be opened", sealed)
		c.Fix = "export OPENADAPT_BUNDLE_KEY=<sealing passphrase> in the environment your agent starts the server in; never pass it as an argument (for Codex also list it in env_vars, see the Codex entry)"
	case refused > 0:
		c.Status = Fail
		c.Message = fmt.Sprintf("OPENADAPT_BUNDLE_KEY is set (value not shown) but does not open %d of %d sealed bundle(s)", refused, sealed)
		c.Fix = "set OPENADAPT_BUNDLE_KEY to the passphrase the bundles were sealed with"
	default:
		c.Status = OK
		c.Message = fmt.Sprintf("OPENADAPT_BUNDLE_KEY is set (value not shown) and opens %d sealed bundle(s)", sealed)
	}
	return c
}

func checkRunsDir(env Env, opts Options) Check {
	c := Check{ID: IDRunsDir}
	p := absFrom(env.WorkDir, opts.RunsDir)
	relative := !filepath.IsAbs(opts.RunsDir)
	relFix := "pass an absolute --runs-dir (agents start servers in a working folder you do not control), for example --runs-dir " + quote(suggestedRunsDir(env))
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		c.Status = Fail
		c.Message = "the runs folder is a symbolic link: serve refuses it"
		c.Fix = "pass a real folder to --runs-dir"
		return c
	case err == nil && !fi.IsDir():
		c.Status = Fail
		c.Message = "the runs folder path exists but is not a folder"
		c.Fix = "pass a folder to --runs-dir"
		return c
	case err == nil:
		if st, err := os.Lstat(filepath.Join(p, ".openadapt-agent")); err == nil && (st.Mode()&os.ModeSymlink != 0 || !st.IsDir()) {
			c.Status = Fail
			c.Message = "the agent state folder .openadapt-agent inside the runs folder is not a real folder"
			c.Fix = "remove the .openadapt-agent entry from the runs folder (serve recreates it with mode 0700)"
			return c
		}
		if err := probeWritable(p); err != nil {
			c.Status = Fail
			c.Message = "the runs folder is not writable"
			c.Fix = "make the runs folder writable by this user, or pass another --runs-dir"
			return c
		}
		c.Message = "the runs folder exists and is writable"
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		parent := nearestExisting(filepath.Dir(p))
		if parent == "" || probeWritable(parent) != nil {
			c.Status = Fail
			c.Message = "the runs folder does not exist and cannot be created here"
			c.Fix = "create it, or pass a --runs-dir under a folder you can write"
			return c
		}
		c.Message = "the runs folder does not exist yet; serve creates it (mode 0700)"
	default:
		c.Status = Fail
		c.Message = "the runs folder cannot be inspected"
		c.Fix = "check the permissions of the --runs-dir path, or pass another --runs-dir"
		return c
	}
	if relative {
		c.Status = Warn
		c.Message += ", but the path is relative"
		c.Fix = relFix
		return c
	}
	c.Status = OK
	return c
}

// suggestedRunsDir is the absolute runs folder the fixes suggest.
func suggestedRunsDir(env Env) string {
	if env.HomeDir != "" {
		return filepath.Join(env.HomeDir, ".openadapt", "runs")
	}
	return "/ABSOLUTE/PATH/TO/runs"
}

// nearestExisting returns p or its closest existing ancestor that is a
// folder, or "".
func nearestExisting(p string) string {
	for {
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				return p
			}
			return ""
		}
		next := filepath.Dir(p)
		if next == p {
			return ""
		}
		p = next
	}
}

// probeWritable creates and removes a temporary file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".openadapt-agent-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
