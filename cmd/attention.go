package cmd

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// `openadapt-agent attention`: the local operator's terminal path for
// attended decisions (docs/attended.md, "The terminal path"). It reads the
// same PHI-safe projection as MCP and decides through the same procedure
// (attention.Decider), the embedded helper and Flow's own checks. A typed
// confirmation on the controlling terminal records decided_by "human";
// --yes (reject, teach, escalate only) records "automation".

type attentionOpts struct {
	runsDir, config, flowPython, url, key string
	headed, yes, json, protected          bool
}

func newAttentionCmd(io *IO) *cobra.Command {
	o := &attentionOpts{}
	c := &cobra.Command{
		Use:   "attention",
		Short: "List and decide Needs Attention items on this computer (Reject, Teach, Escalate, Continue, Skip, Reconcile)",
		Long: `attention lists the paused runs of a runs directory and takes the attended
decisions that MCP clients without form elicitation cannot: each shows the
PHI-safe item, asks you to type the action word on the controlling terminal,
and dispatches through Flow's own attended service.`,
		Example: `  openadapt-agent attention list --runs-dir ~/openadapt/runs
  openadapt-agent attention escalate 302aa61015d20d93ce981a9d --runs-dir ~/openadapt/runs --flow-python /usr/bin/python3
  openadapt-agent attention continue 302aa61015d20d93ce981a9d --config deploy.yaml --headed`,
	}
	pf := c.PersistentFlags()
	pf.StringVar(&o.runsDir, "runs-dir", "", "the runs directory the server used (default <per-user state dir>/openadapt-agent/runs, as serve)")
	list := &cobra.Command{
		Use:     "list",
		Short:   "List the current Needs Attention items (PHI-safe; --protected adds local run folders)",
		Example: "  openadapt-agent attention list --runs-dir ~/openadapt/runs\n  openadapt-agent attention list --runs-dir ~/openadapt/runs --json --protected",
		Args:    noArgs(),
		RunE:    func(*cobra.Command, []string) error { return attentionList(io, o) },
	}
	list.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	list.Flags().BoolVar(&o.protected, "protected", false, "also print protected data: each item's local run folder")
	c.AddCommand(list)
	for _, a := range []struct{ action, short string }{
		{"reject", "End a paused run permanently (no new action is dispatched)"},
		{"teach", "Record an audited request for a corrective demonstration"},
		{"escalate", "Record an audited escalation; the pause stays open"},
		{"continue", "Verify the step a person completed in the live browser and resume (needs --config, headed)"},
		{"skip", "Skip a step the workflow declares safe to skip (needs --config, headed)"},
		{"reconcile", "Reconcile an uncertain delivery read-only, never re-dispatching (needs --config, headed)"},
	} {
		action := a.action
		sub := &cobra.Command{
			Use:     action + " ID",
			Short:   a.short,
			Example: attentionExample(action),
			Args:    exactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return attentionDecide(c.Context(), io, o, action, args[0])
			},
		}
		f := sub.Flags()
		f.StringVar(&o.flowPython, "flow-python", "", "Python interpreter of the Flow install (default: from the openadapt-flow script's shebang)")
		f.StringVar(&o.key, "idempotency-key", "", "reuse the key of an earlier attempt to retry that exact decision (default: a new key)")
		if flowhelper.IsLive(action) {
			f.StringVar(&o.config, "config", "", "deployment config YAML of the live application (required)")
			f.StringVar(&o.url, "url", "", "application URL (overrides deployment.backend.url)")
			f.BoolVar(&o.headed, "headed", false, "visible browser (overrides deployment.backend.headed to true)")
		} else {
			f.BoolVar(&o.yes, "yes", false, "skip the typed confirmation; records decided_by automation")
		}
		c.AddCommand(sub)
	}
	return c
}

func attentionExample(action string) string {
	if flowhelper.IsLive(action) {
		return "  openadapt-agent attention " + action + " 302aa61015d20d93ce981a9d --runs-dir ~/openadapt/runs --config deploy.yaml --headed"
	}
	return "  openadapt-agent attention " + action + " 302aa61015d20d93ce981a9d --runs-dir ~/openadapt/runs\n" +
		"  openadapt-agent attention " + action + " 302aa61015d20d93ce981a9d --runs-dir ~/openadapt/runs --yes"
}

func attentionList(io *IO, o *attentionOpts) error {
	root, err := runsDirOrDefault(o.runsDir)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return withCode(codeOperandMissing, fmt.Errorf("the runs directory does not exist or is not a plain directory: %s", root))
	}
	// A read-only view refuses a runs or state folder others could plant
	// runs in, and never tightens it (as `runs` does).
	var unsafe *runstore.UnsafeDirError
	if err := runstore.CheckRunsDir(root); errors.As(err, &unsafe) {
		return unsafeRunsDirError(unsafe)
	} else if err != nil {
		return withCode(codeOperandUnreadable, fmt.Errorf("the runs directory %s cannot be read", displayPath(root)))
	}
	items := attention.List(root)
	if items == nil {
		items = []attention.Item{}
	}
	if o.protected {
		warnf(io.Err, "--protected prints protected data (local run folders); keep it local")
	}
	type row struct {
		attention.Item
		RunDir *string `json:"run_dir,omitempty"`
	}
	rows := make([]row, len(items))
	for i, it := range items {
		rows[i].Item = it
		if o.protected {
			if d, ok := attention.RunDir(root, it.ID); ok {
				rows[i].RunDir = &d
			}
		}
	}
	if o.json {
		return writeJSON(io.Out, struct {
			MediaType string `json:"mediaType"`
			OpenCount int    `json:"open_count"`
			Items     []row  `json:"items"`
		}{"application/vnd.openadapt-agent.attention-list+json;version=1", len(rows), rows})
	}
	for _, r := range rows {
		actions := "-"
		if r.Capability != nil && len(r.Capability.AllowedActions) > 0 {
			actions = strings.Join(r.Capability.AllowedActions, ",")
		}
		line := fmt.Sprintf("%s  %-20s %-10s actions=%s", r.ID, r.Category, r.Status, actions)
		if r.RunDir != nil {
			line += "  " + *r.RunDir
		}
		fmt.Fprintln(io.Out, line)
	}
	if len(rows) == 0 {
		fmt.Fprintln(io.Err, "no current Needs Attention items")
	}
	return nil
}

// openTTY opens the controlling terminal for the typed confirmation; a
// test knob.
func openTTY() (io.ReadWriteCloser, error) {
	if testOnlyTTY != nil {
		return testOnlyTTY()
	}
	return os.OpenFile("/dev/tty", os.O_RDWR, 0)
}

// testOnlyTTY, when set, stands in for the controlling terminal.
var testOnlyTTY func() (io.ReadWriteCloser, error)

// testOnlyEnviron, when set, replaces os.Environ as the environment the
// helper's child environment is built from.
var testOnlyEnviron func() []string

func attentionEnviron() []string {
	if testOnlyEnviron != nil {
		return testOnlyEnviron()
	}
	return os.Environ()
}

func attentionDecide(ctx context.Context, st *IO, o *attentionOpts, action, id string) error {
	live := flowhelper.IsLive(action)
	if o.key != "" && !validKey(o.key) {
		return usageErrorf("--idempotency-key must match ^[A-Za-z0-9._:-]{16,200}$")
	}
	root, err := runsDirOrDefault(o.runsDir)
	if err != nil {
		return err
	}
	req := attention.Request{AttentionID: id, Action: action, IdempotencyKey: o.key}
	// A same-key retry of a journaled decision replays it, before any
	// confirmation or live session: nothing is dispatched.
	if o.key != "" {
		if done, err := attentionReplay(ctx, st, o, root, req); done {
			return err
		}
	}
	if live && o.config == "" {
		return usageErrorf("attention %s needs --config: it runs in the live application session", action)
	}
	if req.IdempotencyKey == "" {
		req.IdempotencyKey = "attention-cli-" + randHex(16)
	}
	hs := &attentionHelper{io: st, o: o, root: root}
	defer hs.close()
	d := attention.Decider{RunsRoot: root, Start: hs.start}
	res, err := d.Decide(ctx, req, func(ctx context.Context, it attention.Item) (string, error) {
		return attentionConfirm(ctx, st, o, hs, action, it)
	})
	if err != nil {
		return err
	}
	return reportDecision(st, action, req.IdempotencyKey, res)
}

// attentionConfirm asks for the typed confirmation on the controlling
// terminal (or takes --yes), after starting the helper and, for a live
// action, its live session: the person completes the paused task in the
// browser it opened before confirming.
func attentionConfirm(ctx context.Context, st *IO, o *attentionOpts, hs *attentionHelper, action string, it attention.Item) (string, error) {
	// Without --yes the typed confirmation needs the controlling terminal:
	// check it before starting anything.
	var tty io.ReadWriteCloser
	if !o.yes {
		var err error
		if tty, err = openTTY(); err != nil {
			return "", usageErrorf("a typed confirmation needs a controlling terminal (/dev/tty); reject, teach and escalate also accept --yes")
		}
		defer tty.Close()
	}
	fmt.Fprintf(st.Err, "item %s: %s (%s)\n  %s\n  next: %s\n  allowed: %s\n", it.ID, it.Category, it.Status, it.Headline, it.NextAction,
		strings.Join(it.Capability.AllowedActions, ", "))
	if _, err := hs.start(ctx); err != nil {
		return "", err
	}
	h := hs.h
	if flowhelper.IsLive(action) {
		cfg, _ := filepath.Abs(o.config)
		req := flowhelper.DeploymentRequest{DeploymentConfig: cfg, Headed: o.headed}
		if o.url != "" {
			req.URL = &o.url
		}
		info, err := h.CheckDeployment(ctx, req)
		switch {
		case err != nil:
			return "", usageErrorf("the deployment config could not be read: %s", o.config)
		case info.BackendKind == "web" && !info.URLPresent:
			return "", usageErrorf("the live session needs the application URL: set deployment.backend.url in --config or pass --url")
		case info.BackendKind == "web" && !info.Headed:
			return "", usageErrorf("the live session needs a visible browser: set deployment.backend.headed: true in --config or pass --headed")
		}
		if _, err := h.OpenService(ctx, req); err != nil {
			return "", usageErrorf("the attended live session could not be started; see the protected local log %s", h.LogPath)
		}
		if action == "continue" {
			fmt.Fprintln(st.Err, "Complete the paused task yourself in the browser window OpenAdapt opened, then confirm below.")
		}
	}
	if o.yes {
		return attention.DecidedByAutomation, nil
	}
	fmt.Fprintf(tty, "Type %q to confirm %s of item %s: ", action, action, it.ID)
	line, _ := bufio.NewReader(tty).ReadString('\n')
	if strings.TrimRight(line, "\r\n") != action {
		fmt.Fprintln(st.Err, "openadapt-agent: not confirmed; nothing was dispatched")
		return "", errCheckFailed
	}
	return attention.DecidedByHuman, nil
}

// attentionHelper starts the embedded helper for root's runs on first use,
// with the durable-authority database the server recorded there: only that
// journal accepts decisions on the server's pauses.
type attentionHelper struct {
	io   *IO
	o    *attentionOpts
	root string
	h    *flowhelper.Helper
}

func (a *attentionHelper) start(ctx context.Context) (attention.Helper, error) {
	if a.h != nil {
		return a.h, nil
	}
	op, err := flowhelper.Operator()
	if err != nil || op == "" {
		return nil, usageError(errors.New(flowhelper.MsgOperator))
	}
	h, err := flowhelper.Launch(ctx, flowhelper.LaunchOptions{
		FlowPython: a.o.flowPython, Environ: attentionEnviron(),
		RecordedAuthority: true,
		AuthorityNotice: func() {
			fmt.Fprintln(a.io.Err, "using the durable-authority database that serve recorded for this runs directory (OPENADAPT_DURABLE_AUTHORITY_DB or HOME differs here)")
		},
		StateDir: filepath.Join(a.root, ".openadapt-agent"), Instance: "attention-" + randHex(8), Operator: op,
		Features: []flowhelper.Feature{flowhelper.FeatureAttended},
	})
	if err != nil {
		return nil, usageError(err)
	}
	a.h = h
	return h, nil
}

func (a *attentionHelper) close() {
	if a.h != nil {
		_, _ = a.h.Close()
	}
}

// attentionReplay is the terminal's replay (docs/attended.md, "Replay
// after close"): a retry with --idempotency-key of a decision Flow
// journaled for this item and action returns that decision, even after the
// item closed or the server that decided it stopped. Nothing is
// dispatched, so nothing is confirmed. It reports false when the key has
// no such decision.
func attentionReplay(ctx context.Context, st *IO, o *attentionOpts, root string, req attention.Request) (bool, error) {
	hs := &attentionHelper{io: st, o: o, root: root}
	defer hs.close()
	d := attention.Decider{RunsRoot: root, Start: hs.start}
	res, ok, err := d.Replay(ctx, req)
	if !ok || err != nil {
		return ok, err
	}
	if res.Kind == attention.Decided || res.Kind == attention.Malformed {
		fmt.Fprintln(st.Err, "replayed the journaled decision for this idempotency key; nothing was dispatched")
	}
	return true, reportDecision(st, req.Action, req.IdempotencyKey, res)
}

// reportDecision prints a decision's result: the decision on stdout, or
// one error line naming what happened to the request and what to do.
func reportDecision(io *IO, action, key string, res attention.Result) error {
	switch {
	case res.Kind == attention.Decided:
		fmt.Fprintf(io.Out, "decision %s: %s (idempotency key %s)\n", res.Decision.DecisionID, res.Decision.Status, key)
		if res.Decision.Status == "refused" || res.Decision.Status == "halted" {
			return errCheckFailed
		}
		return nil
	case res.Kind == attention.NotFound:
		fmt.Fprintln(io.Err, "openadapt-agent: error: no current Needs Attention item has that id")
	case res.Kind == attention.NotAllowed:
		fmt.Fprintf(io.Err, "openadapt-agent: error: the current capability does not allow %s\n", action)
	case res.Kind == attention.Stale:
		fmt.Fprintln(io.Err, "openadapt-agent: error: the item changed while you confirmed; nothing was dispatched; list it again")
	case res.Kind == attention.Refused, res.Kind == attention.OperatorRefused, res.Kind == attention.PauseNotFound, res.Kind == attention.Busy:
		fmt.Fprintf(io.Err, "openadapt-agent: error: Flow refused the %s; nothing was done (details in the protected local log)\n", action)
	case res.Kind == attention.Failed && !res.Dispatched:
		fmt.Fprintf(io.Err, "openadapt-agent: error: the %s could not be dispatched; nothing was done (details in the protected local log)\n", action)
	case res.Kind == attention.Unavailable:
		fmt.Fprintf(io.Err, "openadapt-agent: error: the Flow helper stopped before the %s was sent; nothing was done\n", action)
	default: // Uncertain, Malformed, or a failure after Flow's execute may have run
		fmt.Fprintf(io.Err, "openadapt-agent: error: delivery of the %s is uncertain (idempotency key %s); do not retry: run `openadapt-agent attention reconcile` for this item\n", action, key)
	}
	return errCheckFailed
}

func validKey(k string) bool {
	if len(k) < 16 || len(k) > 200 {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r)) {
			return false
		}
	}
	return true
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
