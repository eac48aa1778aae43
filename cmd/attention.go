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
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
)

// `openadapt-agent attention`: the local operator's terminal path for
// attended decisions (issue 13 item 6; flow-helper.md §12.6, §12.7,
// §12.23). It reads the same PHI-safe projection as MCP and dispatches
// through the same embedded helper and Flow's own checks. A typed
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
	pf.StringVar(&o.runsDir, "runs-dir", "runs", "the runs directory the server used (pass an absolute path)")
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
	root, err := filepath.Abs(o.runsDir)
	if err != nil {
		return usageError(err)
	}
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return withCode(codeOperandMissing, fmt.Errorf("the runs directory does not exist or is not a plain directory: %s", root))
	}
	// A read-only view refuses a runs or state folder others could plant
	// runs in, and never tightens it (issue 10 leftover; runs.go).
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
	root, err := filepath.Abs(o.runsDir)
	if err != nil {
		return usageError(err)
	}
	// A same-key retry of a journaled decision replays it, before any
	// confirmation or live session: nothing is dispatched.
	if done, err := attentionReplay(ctx, st, o, root, action, id); done {
		return err
	}
	if live && o.config == "" {
		return usageErrorf("attention %s needs --config: it runs in the live application session", action)
	}
	it, err := attention.Get(root, id)
	if err != nil {
		fmt.Fprintln(st.Err, "openadapt-agent: error: no current Needs Attention item has that id")
		return errCheckFailed
	}
	if it.Capability == nil || !slices.Contains(it.Capability.AllowedActions, action) {
		fmt.Fprintf(st.Err, "openadapt-agent: error: the current capability does not allow %s\n", action)
		return errCheckFailed
	}
	// Without --yes the typed confirmation needs the controlling terminal:
	// check it before starting anything.
	var tty io.ReadWriteCloser
	if !o.yes {
		if tty, err = openTTY(); err != nil {
			return usageErrorf("a typed confirmation needs a controlling terminal (/dev/tty); reject, teach and escalate also accept --yes")
		}
		defer tty.Close()
	}
	fmt.Fprintf(st.Err, "item %s: %s (%s)\n  %s\n  next: %s\n  allowed: %s\n", it.ID, it.Category, it.Status, it.Headline, it.NextAction,
		strings.Join(it.Capability.AllowedActions, ", "))

	op, err := flowhelper.Operator()
	if err != nil || op == "" {
		return usageError(errors.New(flowhelper.MsgOperator))
	}
	h, err := startAttentionHelper(ctx, st, o, root, op)
	if err != nil {
		return err
	}
	defer h.Close()
	if live {
		cfg, _ := filepath.Abs(o.config)
		req := flowhelper.DeploymentRequest{DeploymentConfig: cfg, Headed: o.headed}
		if o.url != "" {
			req.URL = &o.url
		}
		info, err := h.CheckDeployment(ctx, req)
		switch {
		case err != nil:
			return usageErrorf("the deployment config could not be read: %s", o.config)
		case info.BackendKind == "web" && !info.URLPresent:
			return usageErrorf("the live session needs the application URL: set deployment.backend.url in --config or pass --url")
		case info.BackendKind == "web" && !info.Headed:
			return usageErrorf("the live session needs a visible browser: set deployment.backend.headed: true in --config or pass --headed")
		}
		if _, err := h.OpenService(ctx, req); err != nil {
			return usageErrorf("the attended live session could not be started; see the protected local log %s", h.LogPath)
		}
		if action == "continue" {
			fmt.Fprintln(st.Err, "Complete the paused task yourself in the browser window OpenAdapt opened, then confirm below.")
		}
	}
	decidedBy := "automation"
	if !o.yes {
		fmt.Fprintf(tty, "Type %q to confirm %s of item %s: ", action, action, it.ID)
		line, _ := bufio.NewReader(tty).ReadString('\n')
		if strings.TrimRight(line, "\r\n") != action {
			fmt.Fprintln(st.Err, "openadapt-agent: not confirmed; nothing was dispatched")
			return errCheckFailed
		}
		decidedBy = "human"
	}
	// Re-check the digest after the confirmation (mcp-surface.md §9.1 step 7).
	again, err := attention.Get(root, id)
	if err != nil || again.Capability == nil || again.Capability.Digest != it.Capability.Digest {
		fmt.Fprintln(st.Err, "openadapt-agent: error: the item changed while you confirmed; nothing was dispatched; list it again")
		return errCheckFailed
	}
	key := o.key
	if key == "" {
		key = "attention-cli-" + randHex(16)
	}
	var dec flowhelper.Decision
	if action == "reconcile" {
		dec, err = h.Reconcile(ctx, flowhelper.ReconcileRequest{Target: flowhelper.Target{RunsRoot: root, AttentionID: id, CapabilityDigest: it.Capability.Digest, IdempotencyKey: key}, DecidedBy: decidedBy, Operator: op})
	} else {
		dec, err = h.Act(ctx, flowhelper.ActRequest{RunsRoot: root, AttentionID: id, CapabilityDigest: it.Capability.Digest,
			IdempotencyKey: key, Action: action, Disposition: flowhelper.Dispositions[action], DecidedBy: decidedBy, Operator: op})
	}
	return reportDecision(st, action, key, dec, err)
}

// startAttentionHelper starts the embedded helper for root's runs with the
// durable-authority database the server recorded there (flow-helper.md
// §12.24): only that journal accepts decisions on the server's pauses.
func startAttentionHelper(ctx context.Context, st *IO, o *attentionOpts, root, op string) (*flowhelper.Helper, error) {
	env := flowrun.ChildEnv(attentionEnviron(), nil)
	state := filepath.Join(root, ".openadapt-agent")
	if p := flowhelper.ReadAuthorityRecord(ctx, state); p != "" {
		wd, _ := os.Getwd()
		if flowhelper.AuthorityDB(env, wd) != p {
			fmt.Fprintln(st.Err, "using the durable-authority database that serve recorded for this runs directory (OPENADAPT_DURABLE_AUTHORITY_DB or HOME differs here)")
		}
		env = flowhelper.WithAuthorityDB(env, p)
	}
	interp, err := flowhelper.FindPython(o.flowPython, "openadapt-flow", envOf(env, "PATH"))
	if err != nil {
		return nil, usageError(err)
	}
	h, err := flowhelper.Start(ctx, flowhelper.Config{Interpreter: interp, StateDir: state,
		Instance: "attention-" + randHex(8), Env: env, Operator: op})
	if err != nil {
		return nil, usageError(err)
	}
	return h, nil
}

// attentionReplay is the terminal's replay after close (flow-helper.md §6,
// §11.1 Q2): a retry with --idempotency-key of a decision Flow journaled
// for this item and action, byte-identical (same key, action, disposition,
// capability digest), returns that decision through attended.replay, even
// after the item closed or the server that decided it stopped. Nothing is
// dispatched, so nothing is confirmed. It reports false when the key has
// no such decision.
func attentionReplay(ctx context.Context, st *IO, o *attentionOpts, root, action, id string) (bool, error) {
	if o.key == "" {
		return false, nil
	}
	dir, ok := attention.RunDir(root, id)
	if !ok {
		return false, nil
	}
	j, ok := flowhelper.LastJournaled(ctx, dir, o.key)
	if !ok || j.Action != action || !j.Replayable(action, j.CapabilityDigest, o.key) {
		return false, nil
	}
	op, err := flowhelper.Operator()
	if err != nil || op == "" {
		return true, usageError(errors.New(flowhelper.MsgOperator))
	}
	h, err := startAttentionHelper(ctx, st, o, root, op)
	if err != nil {
		return true, err
	}
	defer h.Close()
	dec, err := h.Replay(ctx, flowhelper.ReplayRequest{Target: flowhelper.Target{RunsRoot: root, AttentionID: id, CapabilityDigest: j.CapabilityDigest, IdempotencyKey: o.key}, Action: action, Disposition: flowhelper.Dispositions[action]})
	var he *flowhelper.Error
	if errors.As(err, &he) && (he.Reason == "no_prior_decision" || he.Reason == "attention_not_found") {
		return false, nil
	}
	if err == nil {
		fmt.Fprintln(st.Err, "replayed the journaled decision for this idempotency key; nothing was dispatched")
	}
	return true, reportDecision(st, action, o.key, dec, err)
}

func reportDecision(io *IO, action, key string, dec flowhelper.Decision, err error) error {
	var he *flowhelper.Error
	var te *flowhelper.TransportError
	switch {
	case err == nil && dec.Check(action) == nil:
		fmt.Fprintf(io.Out, "decision %s: %s (idempotency key %s)\n", dec.DecisionID, dec.Status, key)
		if dec.Status == "refused" || dec.Status == "halted" {
			return errCheckFailed
		}
		return nil
	case errors.As(err, &he) && (he.Kind == flowhelper.KindRefused || he.Kind == flowhelper.KindBusy):
		fmt.Fprintf(io.Err, "openadapt-agent: error: Flow refused the %s; nothing was done (details in the protected local log)\n", action)
		return errCheckFailed
	case errors.As(err, &he) && !he.Dispatched && he.Kind != flowhelper.KindUncertain:
		fmt.Fprintf(io.Err, "openadapt-agent: error: the %s could not be dispatched; nothing was done (details in the protected local log)\n", action)
		return errCheckFailed
	case errors.As(err, &te) && !te.Written:
		fmt.Fprintf(io.Err, "openadapt-agent: error: the Flow helper stopped before the %s was sent; nothing was done\n", action)
		return errCheckFailed
	}
	fmt.Fprintf(io.Err, "openadapt-agent: error: delivery of the %s is uncertain (idempotency key %s); do not retry: run `openadapt-agent attention reconcile` for this item\n", action, key)
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

func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			v = kv[len(name)+1:]
		}
	}
	return v
}
