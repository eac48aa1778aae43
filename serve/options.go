package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v2"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
)

// Options configure a server. cmd fills them from serve's flags
// (docs/mcp.md "Flags"); the zero value of each field is the flag's
// default unless noted.
type Options struct {
	// Bundles is the first --bundles root ("" for none); BundleRoots, when
	// set, is every root in the order given (repeatable --bundles; Bundles
	// is then its first element).
	Bundles                        string
	BundleRoots                    []string
	AllowRun                       bool
	AllowProtectedExport           bool
	AllowSyntheticRecordedDefaults bool
	AllowAttendedActions           bool
	URL                            string
	Config                         string
	Policy                         string
	RunsDir                        string  // "" means <per-user state dir>/openadapt-agent/runs (internal/util/userdirs)
	Timeout                        float64 // seconds, (0, 86400]; cmd default 600
	AllowURLOverride               bool
	FlowCLI                        string // default "openadapt-flow"
	FlowCLISet                     bool   // --flow-cli was given
	ExtraRunArgs                   []string
	Headed                         bool
	AllowModelGrounding            bool
	Tutorial                       bool
	Authoring                      bool
	ToolMode                       string // "per-workflow" (default) or "catalog"
	RunWait                        int    // seconds, 1–3600; cmd default 40
	PassEnv                        []string
	AuditLog                       string // path, "off", or "" for the default (on when stateful, off when read-only)
	Ledger                         string
	FlowPython                     string // --flow-python: the helper's interpreter
	// Mode is --mode: "" (the flags alone decide), ModeSandbox,
	// ModeProduction or ModeAttended, a preset of the flags above (mode.go).
	Mode string
	// AttendedActions is --attended-actions: AttendedBoth (default) or
	// AttendedAppOnly (docs/mcp.md "MCP Apps").
	AttendedActions string
	// Labels is the --labels file: operator-chosen label and description
	// per workflow id; "" for none.
	Labels string
	// CacheDir holds the verified-digest cache; "" means the per-user cache
	// folder ($XDG_CACHE_HOME/openadapt-agent or ~/.cache/openadapt-agent),
	// "off" disables the cache.
	CacheDir string

	// Sandbox serves the synthetic sandbox workflows (docs/mcp.md
	// "Sandbox"): cmd sets it when none of --bundles, --tutorial,
	// --authoring and --allow-run is given. It cannot be combined with any
	// of them. SandboxEngine is --sandbox-engine: simulated (the default,
	// also for ""), flow or auto; it is refused without Sandbox.
	Sandbox       bool
	SandboxEngine string

	// Version is the agent version reported in serverInfo and the banner.
	Version string
	// Environ is the server's environment (KEY=VALUE); nil means os.Environ.
	Environ []string
	// LookPath resolves the Flow command; nil means exec.LookPath.
	LookPath func(string) (string, error)
}

// ConfigError is a startup configuration error (docs/mcp.md "Configuration
// errors"). Its message is the exact documented copy; cmd prints it as
// "serve: <message>" and exits 2. Flag marks a bad flag value
// (--tool-mode, --run-wait), which cmd reports like any other.
type ConfigError struct {
	Msg  string
	Flag bool
	// flowMissing: the helper could not start because the Flow command is
	// not installed (a server without authoring starts anyway).
	flowMissing bool
}

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, a ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, a...)}
}

// Profile values (docs/mcp.md "Effective profile").
const (
	ProfileNone      = "none"
	ProfileDemo      = "demo"
	ProfileStandard  = "standard"
	ProfileRegulated = "regulated"
)

// withDefaults fills defaults for zero-valued fields.
func (o Options) withDefaults() Options {
	if o.Bundles == "" && len(o.BundleRoots) > 0 {
		o.Bundles = o.BundleRoots[0]
	}
	if o.FlowCLI == "" {
		o.FlowCLI = "openadapt-flow"
	}
	if o.ToolMode == "" {
		o.ToolMode = "per-workflow"
	}
	if o.AttendedActions == "" {
		o.AttendedActions = AttendedBoth
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	return o
}

// prepared is the outcome of startup validation: resolved paths and the
// effective profile.
type prepared struct {
	runsDir  string // absolute, not a symlink
	stateDir string
	// state is the state folder: prepared (and later locked) for a
	// stateful server, read-only otherwise.
	state *runstore.State
	// stateful is true when a flag runs Flow or starts the helper: only then are the runs and state folders
	// created, the owner lock taken and the audit log on by default. A
	// read-only server writes no state at all.
	stateful bool
	// noState: a read-only server whose runs folder could not be
	// determined or read runs without run state (a banner warning).
	noState  bool
	cacheDir string   // "" when the cache is off
	auditLog *os.File // nil when off
	profile  string
	tutorial bool           // tutorial mode, explicit or implied by --allow-run alone
	labels   *labels.Labels // --labels, nil without
}

// readLabels reads --labels: any problem is exit 2 naming the file and, for
// a format error, the JSON pointer of the bad entry, never its text.
func readLabels(path string) (*labels.Labels, error) {
	l, err := labels.Read(context.Background(), path)
	var le *labels.Error
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &le):
		return nil, configErrorf("the --labels file is invalid: %s: %s", path, le)
	case errors.Is(err, fsutil.ErrTooLarge):
		return nil, configErrorf("the --labels file is larger than %s: %s", fsutil.FormatSize(fsutil.Labels.Max), path)
	case errors.Is(err, fsutil.ErrNotRegular):
		return nil, configErrorf("the --labels file is not a regular file: %s", path)
	case errors.Is(err, fs.ErrNotExist):
		return nil, configErrorf("the --labels file does not exist: %s", path)
	}
	return nil, configErrorf("the --labels file could not be read: %s", path)
}

// validate applies the configuration checks in their documented order
// (docs/mcp.md "Configuration errors"; flag syntax is cmd's). It prepares
// the runs and state folders and opens the audit log.
func validate(o Options) (*prepared, error) {
	if o.Sandbox || o.SandboxEngine != "" {
		return validateSandbox(o)
	}
	// The helper must use the Flow runtime the server manages.
	if o.AllowAttendedActions && o.FlowCLISet {
		return nil, configErrorf("attended actions require the openadapt-flow runtime managed by this server; --flow-cli cannot select a different runtime")
	}
	// Synthetic defaults only for runs.
	if o.AllowSyntheticRecordedDefaults && !o.AllowRun {
		return nil, configErrorf("--allow-synthetic-recorded-defaults requires --allow-run")
	}
	if o.Authoring && o.Tutorial {
		return nil, configErrorf("--authoring cannot be combined with --tutorial")
	}
	if o.Authoring && o.AllowRun && o.Bundles == "" {
		return nil, configErrorf("--authoring does not imply --allow-run; --allow-run still requires --bundles")
	}
	// Something to serve; --allow-run alone implies the tutorial.
	tutorial := o.Tutorial
	if !o.Tutorial && o.Bundles == "" && !o.Authoring {
		if !o.AllowRun {
			return nil, configErrorf("provide --bundles, --tutorial, or --authoring (or --allow-run for the synthetic tutorial)")
		}
		tutorial = true
	}
	// The tutorial serves its own bundle, URL and config.
	if tutorial && (o.Bundles != "" || o.URL != "" || o.Config != "") {
		return nil, configErrorf("--tutorial cannot be combined with --bundles, --url, or --config")
	}
	// The tutorial's argv and arguments are fixed, so nothing may add to
	// them.
	if tutorial && (len(o.ExtraRunArgs) > 0 || o.AllowURLOverride || o.AllowSyntheticRecordedDefaults) {
		return nil, configErrorf("--tutorial cannot be combined with --extra-run-arg, --allow-url-override, or --allow-synthetic-recorded-defaults")
	}
	if math.IsNaN(o.Timeout) || o.Timeout <= 0 || o.Timeout > 86400 {
		return nil, configErrorf("--timeout must be a positive number of seconds")
	}
	for _, n := range o.PassEnv {
		if !flowrun.ValidPassEnvName(n) {
			return nil, configErrorf("--pass-env expects an environment variable name")
		}
	}
	if len(o.PassEnv) > flowrun.MaxPassEnv {
		return nil, configErrorf("--pass-env accepts at most %d names", flowrun.MaxPassEnv)
	}
	// --flow-python only with a flag that starts the helper.
	if o.FlowPython != "" && !o.AllowAttendedActions && !tutorial && !o.Authoring {
		return nil, configErrorf("--flow-python requires --allow-attended-actions, --tutorial, or --authoring")
	}
	p := &prepared{stateful: o.AllowRun || o.AllowAttendedActions || tutorial || o.Authoring}
	// The runs folder defaults to the per-user state folder, so a server
	// works from any working folder. Only a stateful server creates it.
	runsDir := o.RunsDir
	var err error
	if runsDir == "" {
		if runsDir, err = userdirs.RunsDir(); err != nil && p.stateful {
			return nil, configErrorf("the runs directory could not be determined (%v); pass an absolute --runs-dir", err)
		}
	}
	unsafe := false
	switch {
	case p.stateful:
		p.state, err = prepareState(runsDir)
	case err == nil:
		p.state, unsafe, err = readOnlyState(runsDir)
	}
	if err != nil && !p.stateful && !unsafe {
		// A read-only server needs no state to answer its read tools: it
		// starts without any (docs/mcp.md "Startup") and says so.
		p.state, err = runstore.Unreadable(), nil
		p.noState = true
	}
	if err != nil {
		return nil, err
	}
	p.runsDir = p.state.RunsDir()
	p.stateDir = p.state.Dir()
	switch o.CacheDir {
	case "off":
	case "":
		if d, err := userdirs.CacheDir(); err == nil {
			p.cacheDir = d
		}
	default:
		if d, err := filepath.Abs(o.CacheDir); err == nil {
			p.cacheDir = d
		}
	}
	// A read-only server keeps no audit log unless --audit-log names one.
	if o.AuditLog != "off" && (o.AuditLog != "" || p.stateful) {
		path := o.AuditLog
		if path == "" {
			path = filepath.Join(p.stateDir, "audit.jsonl")
		}
		// Appended to by this user's servers alike, never through a link or
		// into a file another user could have planted (fsutil.OpenOurs).
		f, err := fsutil.OpenOurs(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		var ne *fsutil.NotOursError
		if errors.As(err, &ne) {
			return nil, configErrorf("%s", ne)
		} else if err != nil {
			return nil, configErrorf("the audit log could not be opened: %s", path)
		}
		p.auditLog = f
	}
	fail := func(err error) (*prepared, error) {
		if p.auditLog != nil {
			p.auditLog.Close()
		}
		return nil, err
	}
	// The effective profile (docs/mcp.md "Effective profile").
	if tutorial {
		p.profile = "tutorial"
	} else {
		prof, err := effectiveProfile(o.ExtraRunArgs, o.Config)
		if err != nil {
			return fail(err)
		}
		p.profile = prof
	}
	if o.Ledger != "" {
		fi, err := os.Stat(o.Ledger)
		if err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
			return fail(configErrorf("--ledger must name a ledger file or directory: %s", o.Ledger))
		}
	}
	p.tutorial = tutorial
	// The operator's --labels file.
	if o.Labels != "" {
		l, err := readLabels(o.Labels)
		if err != nil {
			return fail(err)
		}
		p.labels = l
	}
	// An authoring-only server serves no bundles; tutorial mode has none.
	if o.authoringOnly() || tutorial {
		return p, nil
	}
	if err := checkRoots(o.roots()); err != nil {
		return fail(err)
	}
	return p, nil
}

// validateSandbox checks a sandbox server's options. The simulated sandbox
// writes no state: no runs or state folder is prepared or read, and the
// audit log is off unless --audit-log names one.
func validateSandbox(o Options) (*prepared, error) {
	switch {
	case !o.Sandbox:
		return nil, configErrorf("--sandbox-engine is only for the sandbox (serve without --bundles, --tutorial, --authoring or --allow-run)")
	case o.Bundles != "" || o.AllowRun || o.Tutorial || o.Authoring:
		return nil, configErrorf("the sandbox cannot be combined with --bundles, --allow-run, --tutorial or --authoring")
	}
	switch o.SandboxEngine {
	case "", EngineSimulated:
	case EngineFlow:
		// Flow's tutorial, prepared and run as in tutorial mode: its checks
		// and its state.
		t := o
		t.Sandbox, t.SandboxEngine, t.Tutorial = false, "", true
		return validate(t)
	case EngineAuto:
		return nil, configErrorf("--sandbox-engine auto is resolved before startup")
	default:
		return nil, configErrorf("%s", sandboxEngineError)
	}
	if math.IsNaN(o.Timeout) || o.Timeout <= 0 || o.Timeout > 86400 {
		return nil, configErrorf("--timeout must be a positive number of seconds")
	}
	p := &prepared{state: runstore.Unreadable(), profile: ProfileNone}
	if o.AuditLog != "off" && o.AuditLog != "" {
		f, err := fsutil.OpenOurs(o.AuditLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		var ne *fsutil.NotOursError
		if errors.As(err, &ne) {
			return nil, configErrorf("%s", ne)
		} else if err != nil {
			return nil, configErrorf("the audit log could not be opened: %s", o.AuditLog)
		}
		p.auditLog = f
	}
	if o.Labels != "" {
		l, err := readLabels(o.Labels)
		if err != nil {
			if p.auditLog != nil {
				p.auditLog.Close()
			}
			return nil, err
		}
		p.labels = l
	}
	return p, nil
}

// runsEnabled reports whether run tools are served: with --allow-run, and
// in the sandbox.
func (o Options) runsEnabled() bool { return o.AllowRun || o.Sandbox }

// roots are the --bundles roots in the order given.
func (o Options) roots() []string {
	if len(o.BundleRoots) > 0 {
		return o.BundleRoots
	}
	if o.Bundles == "" {
		return nil
	}
	return []string{o.Bundles}
}

// checkRoots checks every root exists and refuses a root given twice (the
// same device and inode) or inside another, naming both.
func checkRoots(roots []string) error {
	type seen struct {
		path, real string
		fi         os.FileInfo
	}
	var ok []seen
	for _, r := range roots {
		fi, err := os.Stat(r)
		if err != nil || !fi.IsDir() {
			return configErrorf("bundles directory does not exist: %s", r)
		}
		real, err := filepath.EvalSymlinks(r)
		if err == nil {
			real, err = filepath.Abs(real)
		}
		if err != nil {
			return configErrorf("bundles directory does not exist: %s", r)
		}
		for _, o := range ok {
			switch {
			case os.SameFile(o.fi, fi):
				return configErrorf("--bundles %s and --bundles %s are the same folder; give each root once", o.path, r)
			case within(real, o.real):
				return configErrorf("--bundles %s is inside --bundles %s; give only the outer root", r, o.path)
			case within(o.real, real):
				return configErrorf("--bundles %s is inside --bundles %s; give only the outer root", o.path, r)
			}
		}
		ok = append(ok, seen{r, real, fi})
	}
	return nil
}

// within reports whether path is strictly inside dir (both absolute, clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && filepath.IsLocal(rel)
}

// prepareState readies the runs folder of a server that runs Flow
// (internal/runstore), with the exact exit-2 copy for what stops it.
func prepareState(dir string) (*runstore.State, error) {
	st, err := runstore.Prepare(dir)
	var ue *runstore.UnsafeDirError
	var pe *runstore.PrepareError
	switch {
	case err == nil:
		return st, nil
	case errors.As(err, &ue):
		return nil, configErrorf("the runs or state directory %s is accessible to other users and not owned by this user; make it private (chmod 700) or pass another --runs-dir", ue.Path)
	case errors.As(err, &pe):
		return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", pe.Path)
	}
	return nil, configErrorf("the runs directory could not be prepared: %s; pass an absolute --runs-dir", dir)
}

// readOnlyState is the runs folder of a server that writes no state but
// still reads it (get_run_report, list_needs_attention): an existing runs
// or state folder that is a symbolic link, writable by other users or
// owned by another user is refused, never tightened (a read-only command
// does not change it; unsafe is true). A missing folder is fine: it simply
// has no runs yet.
func readOnlyState(dir string) (st *runstore.State, unsafe bool, err error) {
	st, err = runstore.ReadOnly(dir)
	var ue *runstore.UnsafeDirError
	switch {
	case err == nil:
		return st, false, nil
	case errors.As(err, &ue):
		return nil, true, configErrorf("refusing to read the runs or state directory %s: it %s; a read-only server does not change it: make it private (chmod 700) or pass another --runs-dir", ue.Path, ue.Reason)
	}
	abs, aerr := filepath.Abs(dir)
	if aerr != nil {
		abs = dir
	}
	return nil, false, configErrorf("the runs directory could not be read: %s; pass an absolute --runs-dir", abs)
}

// effectiveProfile resolves the effective profile (docs/mcp.md "Effective
// profile"; tutorial mode excluded).
func effectiveProfile(extra []string, config string) (string, error) {
	prof, profSet := "", false
	for i := 0; i < len(extra); i++ {
		a := extra[i]
		name, val, hasEq := strings.Cut(a, "=")
		if name != "--profile" && len(name) >= 3 && strings.HasPrefix("--profile", name) {
			return "", configErrorf("--extra-run-arg must spell --profile in full")
		}
		if name != "--profile" {
			continue
		}
		profSet = true
		if hasEq {
			prof = val
			continue
		}
		prof = ""
		if i+1 < len(extra) {
			prof = extra[i+1]
			i++
		}
	}
	fromConfig, configSet := "", false
	if config != "" {
		// The one bounded read (internal/util/fsutil): a FIFO or device is refused
		// at once, a file above 1 MiB before it is read.
		data, err := fsutil.ReadFile(context.Background(), config, fsutil.DeploymentConfig)
		switch {
		case errors.Is(err, fsutil.ErrNotRegular):
			return "", configErrorf("the deployment config is not a regular file: %s", config)
		case errors.Is(err, fsutil.ErrTooLarge):
			return "", configErrorf("the deployment config exceeds 1 MiB: %s", config)
		case err != nil:
			return "", configErrorf("the deployment config could not be read: %s", config)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return "", configErrorf("the deployment config could not be read: %s", config)
		}
		if rt, ok := doc["runtime"].(map[any]any); ok {
			if v, ok := rt["profile"]; ok && v != nil {
				s, isStr := v.(string)
				if !isStr {
					return "", configErrorf("unsupported execution profile; use demo, standard, or regulated")
				}
				fromConfig, configSet = s, true
			}
		}
	}
	switch {
	case profSet:
	case configSet:
		prof = fromConfig
	default:
		return ProfileNone, nil
	}
	switch prof {
	case ProfileDemo, ProfileStandard, ProfileRegulated:
		return prof, nil
	}
	return "", configErrorf("unsupported execution profile; use demo, standard, or regulated")
}
