// Package tutorial prepares Flow's synthetic MockMed tutorial for `serve`'s
// tutorial mode and `openadapt-agent tutorial prepare`, through the helper's
// tutorial.prepare op (docs/helper.md, "Ops").
//
// Flow is the authority: the bundle is recorded, compiled and certified by
// Flow's own tutorial code inside the Flow-side helper, which also keeps
// MockMed's fault server up on a loopback port for the helper's lifetime.
// This package only asks for it ([Prepare]), checks what came back against
// the agent's own bundle verifier, and records the prepared content digest in
// the state directory (<state>/tutorial-<instance>.json). That record is the
// only admission exemption the tutorial has ([Session.Exempt]): it is bound
// to the digest this server prepared, never to a label and never to any
// other bundle.
//
// Stable API: everything exported here. Error text never carries Flow's
// messages; details stay in the helper's protected local log.
package tutorial

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// WorkflowID is the tutorial's fixed workflow id.
const WorkflowID = "local_quickstart"

// ToolName is the tutorial's run tool.
const ToolName = "run_local_quickstart"

// Note is Flow's TUTORIAL_NOTE (tutorial.py:66): the server writes the fixed
// parameters file {"note": Note} for every tutorial run; the tool itself
// takes only idempotency_key.
const Note = "Synthetic follow-up in two weeks"

// EntryQuery is Flow's TUTORIAL_ENTRY_QUERY (tutorial.py:78).
const EntryQuery = "?fault=ok&idempotency=demo#tasks"

// DirName is the tutorial's work directory under the runs directory.
const DirName = "synthetic-tutorial"

// Params returns the fixed parameters of every tutorial run.
func Params() map[string]string { return map[string]string{"note": Note} }

// Phases, in the order the helper reports them, then the two Go-side ones.
// They are the failure vocabulary too: a failure names the last phase seen.
var phaseText = map[string]string{
	"start":      "starting the Flow helper",
	"lock":       "waiting for any other preparation of this runs directory",
	"mockmed":    "starting the synthetic MockMed app on a loopback port",
	"verify":     "checking the prepared bundle for reuse",
	"replace":    "replacing the prepared bundle",
	"record":     "recording the synthetic demonstration in a browser",
	"compile":    "compiling the demonstration into a bundle",
	"certify":    "certifying the bundle against the clinical-write policy",
	"deployment": "writing the synthetic deployment config",
	"bundle":     "verifying the bundle with the agent's own verifier",
	"state":      "recording the prepared digest",
}

// KnownPhase reports whether p is one of the helper's tutorial.prepare
// phases; anything else fails the frame schema.
func KnownPhase(p string) bool {
	switch p {
	case "lock", "mockmed", "verify", "replace", "record", "compile", "certify", "deployment":
		return true
	}
	return false
}

// Request is tutorial.prepare's request, with the instance (it names the
// per-instance deployment config) and the operator's --policy.
type Request struct {
	WorkDir  string
	Headed   bool
	Reuse    bool
	Instance string
	// Policy is --policy, or "" for Flow's TUTORIAL_POLICY (clinical-write).
	Policy string
}

// Result is tutorial.prepare's result.
type Result struct {
	BundleDir, BaseURL, URL, DeploymentConfig, ContentDigest string
	Reused                                                   bool
}

// Helper is the part of the Flow-side helper the tutorial uses
// (internal/flow/flowhelper's *Helper through a small adapter).
type Helper interface {
	// PrepareTutorial sends tutorial.prepare; progress is called once per
	// progress frame, in order, before it returns.
	PrepareTutorial(ctx context.Context, req Request, progress func(phase string)) (Result, error)
	// Alive reports whether the helper (and so MockMed) is still running.
	Alive() bool
}

// Options configure [Prepare].
type Options struct {
	// RunsDir is the absolute runs directory; the work directory is
	// RunsDir/synthetic-tutorial.
	RunsDir string
	// StateDir is the agent state directory (0700, existing); the exemption
	// record is StateDir/tutorial-<Instance>.json.
	StateDir string
	// Instance is the owner id, 16 lowercase hex.
	Instance string
	Headed   bool
	Policy   string
	// NoReuse rebuilds even when a reusable bundle exists.
	NoReuse bool
	// Progress receives one line per phase, "<Prefix>synthetic tutorial: …".
	Progress io.Writer
	Prefix   string
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time
}

// Error is a failed preparation. Its text is the operator message: the
// phase that failed and where the details are; Err (protected detail: may
// hold paths) is for logs.
type Error struct {
	Phase string
	Err   error
}

func (e *Error) Error() string {
	return "synthetic tutorial failed at " + e.Phase + "; see the protected local log"
}

func (e *Error) Unwrap() error { return e.Err }

// Session is a prepared tutorial. Its files are removed by [Session.Close];
// MockMed lives as long as the helper.
type Session struct {
	BundleDir, URL, BaseURL, DeploymentConfig string
	// ContentDigest is the verified content digest (64 lowercase hex).
	ContentDigest string
	Reused        bool
	Elapsed       time.Duration

	h         Helper
	statePath string
	closeOnce sync.Once
}

// record is <state>/tutorial-<instance>.json.
type record struct {
	SchemaVersion int    `json:"schema_version"`
	Instance      string `json:"instance"`
	BundleDir     string `json:"bundle_dir"`
	ContentDigest string `json:"content_digest"`
	PreparedAt    string `json:"prepared_at"`
	Reused        bool   `json:"reused"`
}

var (
	instanceRE = lazyre.New(`^[0-9a-f]{16}$`)
	digestRE   = lazyre.New(`^[0-9a-f]{64}$`)
	baseURLRE  = lazyre.New(`^http://127\.0\.0\.1:[1-9][0-9]{0,4}/$`)
)

// StatePath is the exemption record of instance in stateDir.
func StatePath(stateDir, instance string) string {
	return filepath.Join(stateDir, "tutorial-"+instance+".json")
}

// Prepare asks the helper to prepare (or reuse) the tutorial under
// o.RunsDir/synthetic-tutorial, checks the answer, verifies the bundle with
// the agent's own verifier and records its digest. It prints one progress
// line per phase. Every failure is an [*Error] naming the phase.
func Prepare(ctx context.Context, h Helper, o Options) (*Session, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	out := o.Progress
	if out == nil {
		out = io.Discard
	}
	t0 := now()
	phase := "lock"
	say := func(p string) {
		phase = p
		fmt.Fprintf(out, "%ssynthetic tutorial: %s (%.1f s)\n", o.Prefix, phaseText[p], now().Sub(t0).Seconds())
	}
	fail := func(err error) (*Session, error) { return nil, &Error{Phase: phase, Err: err} }

	if !instanceRE().MatchString(o.Instance) || !filepath.IsAbs(o.RunsDir) || !filepath.IsAbs(o.StateDir) {
		return fail(errors.New("tutorial: bad options"))
	}
	work := filepath.Join(o.RunsDir, DirName)
	if err := ensureDir(work); err != nil {
		return fail(err)
	}
	res, err := h.PrepareTutorial(ctx, Request{WorkDir: work, Headed: o.Headed, Reuse: !o.NoReuse,
		Instance: o.Instance, Policy: o.Policy}, func(p string) {
		if KnownPhase(p) {
			say(p)
		}
	})
	if err != nil {
		return fail(err)
	}
	if err := checkResult(res, work, o.Instance); err != nil {
		return fail(err)
	}
	say("bundle")
	b, err := bundle.Load(res.BundleDir, bundle.WithoutKey())
	if err != nil || b == nil || !b.Verified() {
		return fail(fmt.Errorf("tutorial: the prepared bundle does not verify: %v", err))
	}
	if b.ContentDigest != res.ContentDigest {
		return fail(errors.New("tutorial: the helper's digest differs from the verified bundle"))
	}
	if p := b.DeclaredParams(); len(p) != 1 || p[0] != "note" {
		return fail(errors.New("tutorial: the prepared bundle does not declare exactly the note parameter"))
	}
	say("state")
	s := &Session{BundleDir: res.BundleDir, URL: res.URL, BaseURL: res.BaseURL,
		DeploymentConfig: res.DeploymentConfig, ContentDigest: b.ContentDigest, Reused: res.Reused,
		h: h, statePath: StatePath(o.StateDir, o.Instance)}
	raw, _ := json.Marshal(record{SchemaVersion: 1, Instance: o.Instance, BundleDir: res.BundleDir,
		ContentDigest: b.ContentDigest, PreparedAt: now().UTC().Format(time.RFC3339Nano), Reused: res.Reused})
	if err := fsutil.WriteFile(s.statePath, append(raw, '\n'), 0o600); err != nil {
		return fail(err)
	}
	s.Elapsed = now().Sub(t0)
	how := "prepared"
	if s.Reused {
		how = "reused"
	}
	fmt.Fprintf(out, "%ssynthetic tutorial ready (%s) in %.1f s\n", o.Prefix, how, s.Elapsed.Seconds())
	return s, nil
}

// checkResult holds the helper to the exact paths and loopback URLs it must
// answer with; anything else is refused rather than run.
func checkResult(r Result, work, instance string) error {
	switch {
	case r.BundleDir != filepath.Join(work, "bundle"):
		return errors.New("tutorial: unexpected bundle_dir")
	case r.DeploymentConfig != filepath.Join(work, "deployment-"+instance+".yaml"):
		return errors.New("tutorial: unexpected deployment_config")
	case !baseURLRE().MatchString(r.BaseURL):
		return errors.New("tutorial: base_url is not a loopback MockMed URL")
	case r.URL != r.BaseURL+EntryQuery:
		return errors.New("tutorial: unexpected url")
	case !digestRE().MatchString(r.ContentDigest):
		return errors.New("tutorial: bad content_digest")
	}
	return nil
}

// ensureDir creates dir 0700 or accepts an existing real directory; a
// symlink (or anything else) is refused, never followed.
func ensureDir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if err == nil || errors.Is(err, os.ErrExist) {
		fi, lerr := os.Lstat(dir)
		if lerr != nil {
			return lerr
		}
		if !fi.IsDir() {
			return fmt.Errorf("tutorial: %s is not a directory", dir)
		}
		return nil
	}
	return err
}

// Alive reports whether the helper holding MockMed is still running.
func (s *Session) Alive() bool { return s.h.Alive() }

// Exempt re-verifies the prepared bundle now and reports whether its digest
// equals the one recorded in <state>/tutorial-<instance>.json
// (the tutorial's only admission exemption). dir is the bundle directory the caller is about to
// run. Any doubt (record missing or changed, another directory, a bundle that
// no longer verifies, a different digest) is false: admission_required.
func (s *Session) Exempt(dir string) bool {
	if s == nil || filepath.Clean(dir) != s.BundleDir {
		return false
	}
	rec, err := readRecord(s.statePath)
	if err != nil || rec.BundleDir != s.BundleDir || rec.ContentDigest != s.ContentDigest {
		return false
	}
	b, err := bundle.Load(dir, bundle.WithoutKey())
	if err != nil || b == nil || !b.Verified() {
		return false
	}
	return b.ContentDigest == rec.ContentDigest
}

// readRecord reads the exemption record: a regular file of this user's own
// (never through a link, never a FIFO, never one planted by another user),
// at most 4 KiB, strict JSON of exactly the record's fields.
func readRecord(path string) (record, error) {
	var r record
	data, err := fsutil.ReadOurs(context.Background(), path, fsutil.Limit{Kind: "tutorial record", Max: 4096})
	if err != nil {
		return r, err
	}
	if pyjson.Unmarshal(data, pyjson.Options{Closed: true}, &r) != nil || r.SchemaVersion != 1 {
		return r, errors.New("tutorial: bad state record")
	}
	return r, nil
}

// Close removes this session's state record and deployment config. The
// bundle stays for the next start to reuse.
func (s *Session) Close() {
	if s == nil {
		return
	}
	s.closeOnce.Do(func() {
		os.Remove(s.statePath)
		os.Remove(s.DeploymentConfig)
	})
}
