package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/runstore"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/userdirs"
	"github.com/OpenAdaptAI/openadapt-agent/serve"
)

// `openadapt-agent runs list|show`: the local operator's read-only view of
// the runs serve recorded, through internal/runstore (docs/runs.md "Run
// records"). Both print
// allowlisted, validated record fields only; `show --protected` adds the
// kept tail of Flow's stderr, with the same warning `bundle inspect
// --protected` prints. Nothing here writes, and an unsafe runs or state
// folder is refused (exit 2, as serve refuses it), never tightened.

const (
	runListMediaType = "application/vnd.openadapt-agent.run-list+json;version=1"
	runMediaType     = "application/vnd.openadapt-agent.run+json;version=1"
)

// Failure codes of the runs commands.
const (
	codeRunNotFound   = "run_not_found"
	codeRunUnreadable = "run_unreadable"
)

func init() {
	failureMessages[codeRunNotFound] = "No run with this id is recorded in the runs directory."
	failureMessages[codeRunUnreadable] = "The run's record or kept stderr tail cannot be read safely; stderr says why."
}

type runsOpts struct {
	runsDir         string
	json, protected bool
}

func newRunsCmd(io *IO) *cobra.Command {
	o := &runsOpts{}
	c := &cobra.Command{
		Use:   "runs",
		Short: "Look at the runs serve recorded on this computer (status, timings, Flow's exit code and stderr)",
		Long: `runs reads the run records a serve started with --allow-run keeps in
<runs-dir>/.openadapt-agent/runs/. It only reads: a runs or state folder that is a
symbolic link, writable by other users or owned by another user is refused
(exit 2) and left as it is.

runs list and runs show print PHI-safe fields only. runs show --protected adds
the kept tail of Flow's stderr (the last 64 KiB, stored 0600), which can hold
patient data, with a warning on stderr: keep it local.`,
		Example: `  openadapt-agent runs list
  openadapt-agent runs show run-0123456789abcdef01234567
  openadapt-agent runs show run-0123456789abcdef01234567 --protected`,
	}
	c.PersistentFlags().StringVar(&o.runsDir, "runs-dir", "", "the runs directory serve used (default <per-user state dir>/openadapt-agent/runs, as serve)")
	_ = c.MarkPersistentFlagDirname("runs-dir")
	list := &cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first: id, workflow, status, start, end, duration, Flow exit code",
		Example: `  openadapt-agent runs list
  openadapt-agent runs list --runs-dir ~/openadapt/runs --json`,
		Args: noArgs(),
		RunE: func(c *cobra.Command, _ []string) error { return runsList(c, io, o) },
	}
	list.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show one run: status, timings, Flow exit code, outcome, report path (--protected adds Flow's stderr tail)",
		Example: `  openadapt-agent runs show run-0123456789abcdef01234567
  openadapt-agent runs show run-0123456789abcdef01234567 --runs-dir ~/openadapt/runs --json
  openadapt-agent runs show run-0123456789abcdef01234567 --protected`,
		Args: exactArgs(1),
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeRunIDs(c, o), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error { return runsShow(c, io, o, args[0]) },
	}
	show.Flags().BoolVar(&o.json, "json", false, "print one JSON document")
	show.Flags().BoolVar(&o.protected, "protected", false, "also print protected data: the kept tail of Flow's stderr")
	c.AddCommand(list, show)
	return c
}

// openRuns opens the runs folder of o: --runs-dir, else serve's default.
// explicit says whether the operator named it.
func openRuns(o *runsOpts) (st *runstore.Store, dir string, explicit bool, err error) {
	dir, explicit = o.runsDir, o.runsDir != ""
	if !explicit {
		d, err := userdirs.RunsDir()
		if err != nil {
			return nil, "", false, usageErrorf("the runs directory could not be determined (%v); pass --runs-dir", err)
		}
		dir = d
	}
	st, err = runstore.Open(dir)
	var ue *runstore.UnsafeDirError
	switch {
	case err == nil:
		return st, st.Dir(), explicit, nil
	case errors.As(err, &ue):
		return nil, dir, explicit, unsafeRunsDirError(ue)
	case errors.Is(err, fs.ErrNotExist):
		return nil, dir, explicit, err
	default:
		return nil, dir, explicit, withCode(codeOperandUnreadable, fmt.Errorf("the runs directory %s cannot be read", displayPath(dir)))
	}
}

// unsafeRunsDirError is a refused runs or state folder: exit 2, as serve
// refuses it at startup (serve/options.go), with what to do. Read-only
// commands never change the folder themselves.
func unsafeRunsDirError(ue *runstore.UnsafeDirError) error {
	err := usageErrorf("refusing to read the runs or state directory %s: it %s", displayPath(ue.Path), ue.Reason)
	switch {
	case strings.Contains(ue.Reason, "owned by another user"):
		return withHint(err, "read only runs folders you own, or pass another --runs-dir")
	case strings.Contains(ue.Reason, "writable"):
		return withHint(err, "make it private (chmod 700; serve does this when it next starts) or pass another --runs-dir")
	}
	return withHint(err, "pass the real folder as --runs-dir")
}

// runRow is the allowlisted list entry.
type runRow struct {
	RunID      string  `json:"run_id"`
	WorkflowID string  `json:"workflow_id"`
	Status     string  `json:"status"`
	StartedAt  string  `json:"started_at"`
	EndedAt    *string `json:"ended_at"`
	DurationMS *int64  `json:"duration_ms"`
	ExitCode   *int    `json:"exit_code"`
}

func newRunRow(r *runstore.Record) runRow {
	row := runRow{RunID: r.RunID, WorkflowID: r.WorkflowID, Status: r.Status(), StartedAt: stamp(r.StartedAt), ExitCode: r.ExitCode}
	if r.EndedAt != nil {
		e := stamp(*r.EndedAt)
		row.EndedAt = &e
	}
	if d, ok := r.Duration(); ok {
		ms := d.Milliseconds()
		row.DurationMS = &ms
	}
	return row
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func runsList(c *cobra.Command, io *IO, o *runsOpts) error {
	st, dir, explicit, err := openRuns(o)
	if errors.Is(err, fs.ErrNotExist) {
		if explicit {
			return withCode(codeOperandMissing, fmt.Errorf("the runs directory does not exist: %s", displayPath(dir)))
		}
		// The default folder appears with serve's first run.
		return writeRunList(io, o, dir, &runstore.Listing{})
	}
	if err != nil {
		return err
	}
	defer st.Close()
	l, err := st.List(c.Context())
	if err != nil {
		if c.Context().Err() != nil {
			return c.Context().Err()
		}
		return withCode(codeOperandUnreadable, fmt.Errorf("the run records of %s cannot be listed", displayPath(dir)))
	}
	return writeRunList(io, o, dir, l)
}

func writeRunList(io *IO, o *runsOpts, dir string, l *runstore.Listing) error {
	rows := make([]runRow, 0, len(l.Runs))
	for _, r := range l.Runs {
		rows = append(rows, newRunRow(r))
	}
	if l.Unreadable > 0 {
		warnf(io.Err, "%d run record(s) in %s could not be read safely (a link, not a regular file, too large, writable by others, or malformed) and are not listed", l.Unreadable, displayPath(dir))
	}
	if l.Truncated {
		warnf(io.Err, "more than %d run records: only those read are listed", runstore.MaxListed)
	}
	if o.json {
		return writeJSON(io.Out, struct {
			MediaType  string   `json:"mediaType"`
			Count      int      `json:"count"`
			Unreadable int      `json:"unreadable"`
			Truncated  bool     `json:"truncated"`
			Runs       []runRow `json:"runs"`
		}{runListMediaType, len(rows), l.Unreadable, l.Truncated, rows})
	}
	if len(rows) == 0 {
		fmt.Fprintf(io.Err, "openadapt-agent: no runs recorded in %s\n", displayPath(dir))
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN ID\tWORKFLOW\tSTATUS\tSTARTED\tENDED\tDURATION\tEXIT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.WorkflowID, r.Status, humanStamp(&r.StartedAt), humanStamp(r.EndedAt), humanDuration(r.DurationMS), humanExit(r.ExitCode))
	}
	return tw.Flush()
}

// runDoc is the allowlisted `runs show` document.
type runDoc struct {
	MediaType string `json:"mediaType"`
	runRow
	BaseWorkflowID      *string              `json:"base_workflow_id"`
	BundleContentDigest *string              `json:"bundle_content_digest"`
	ExecutionOutcome    *string              `json:"execution_outcome"`
	EffectVerified      bool                 `json:"effect_verified"`
	MessageKey          *runstore.MessageKey `json:"message_key"`
	Message             string               `json:"message"`
	Summary             *flowrun.Summary     `json:"summary"`
	// ReportPath is Flow's report.json in the run folder, when it is there.
	ReportPath *string       `json:"report_path"`
	Protected  *runProtected `json:"protected,omitempty"`
}

type runProtected struct {
	// StderrTail is the kept tail of Flow's stderr (invalid UTF-8 replaced);
	// null when the run kept none.
	StderrTail *string `json:"stderr_tail"`
	// StderrTailBytes is the size of the kept tail file.
	StderrTailBytes int `json:"stderr_tail_bytes"`
}

func runsShow(c *cobra.Command, io *IO, o *runsOpts, id string) error {
	if !flowrun.ValidRunID(id) {
		return usageErrorf("not a run id: %s (want run- and 24 lowercase hex digits, as runs list prints)", strconv.Quote(truncate(id, 80)))
	}
	st, dir, explicit, err := openRuns(o)
	if errors.Is(err, fs.ErrNotExist) {
		if explicit {
			return withCode(codeOperandMissing, fmt.Errorf("the runs directory does not exist: %s", displayPath(dir)))
		}
		return runNotFound(id, dir)
	}
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := st.Get(c.Context(), id)
	switch {
	case errors.Is(err, runstore.ErrNotFound):
		return runNotFound(id, dir)
	case err != nil && c.Context().Err() != nil:
		return c.Context().Err()
	case err != nil:
		return withCode(codeRunUnreadable, fmt.Errorf("the record of %s cannot be read safely: %v", id, err))
	}
	doc := runDoc{MediaType: runMediaType, runRow: newRunRow(r)}
	if r.BaseWorkflowID != "" {
		doc.BaseWorkflowID = &r.BaseWorkflowID
	}
	if r.BundleContentDigest != "" {
		doc.BundleContentDigest = &r.BundleContentDigest
	}
	if oc := r.Outcome; oc != nil {
		if oc.ExecutionOutcome != "" {
			doc.ExecutionOutcome = &oc.ExecutionOutcome
		}
		doc.EffectVerified = oc.EffectVerified
		doc.MessageKey = &oc.MessageKey
		doc.Message = serve.RunMessage(oc.MessageKey)
		sum := oc.Summary
		doc.Summary = &sum
	} else {
		doc.Message = serve.RunningMessage()
	}
	if p := st.ReportPath(id); p != "" {
		doc.ReportPath = &p
	}
	if o.protected {
		warnf(io.Err, "--protected prints protected data (Flow's stderr, which can hold patient data); keep it local")
		data, kept, err := st.Stderr(c.Context(), id)
		switch {
		case err != nil && c.Context().Err() != nil:
			return c.Context().Err()
		case err != nil:
			return withCode(codeRunUnreadable, fmt.Errorf("the kept stderr tail of %s cannot be read safely: %v", id, err))
		}
		doc.Protected = &runProtected{StderrTailBytes: len(data)}
		if kept {
			s := strings.ToValidUTF8(string(data), "\uFFFD")
			doc.Protected.StderrTail = &s
		}
	}
	if o.json {
		return writeJSON(io.Out, doc)
	}
	return writeRunText(io.Out, &doc)
}

func runNotFound(id, dir string) error {
	return withHint(withCode(codeRunNotFound, fmt.Errorf("no run %s is recorded in %s", id, displayPath(dir))),
		"list the recorded runs with 'openadapt-agent runs list' (and the same --runs-dir serve used)")
}

func writeRunText(w io.Writer, d *runDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	line("run", d.RunID)
	line("workflow", d.WorkflowID)
	line("status", d.Status)
	line("outcome", orDash(d.ExecutionOutcome))
	if d.EffectVerified {
		line("effect verified", "true (do not retry or repeat this run)")
	}
	line("message", d.Message)
	line("started", humanStamp(&d.StartedAt))
	line("ended", humanStamp(d.EndedAt))
	line("duration", humanDuration(d.DurationMS))
	line("flow exit code", humanExit(d.ExitCode))
	if s := d.Summary; s != nil && s.StepsTotal != nil {
		line("steps", fmt.Sprintf("%d total, %d ok, %d skipped", *s.StepsTotal, deref(s.StepsOK), deref(s.StepsSkipped)))
	}
	line("report", orDash(d.ReportPath))
	if d.BundleContentDigest != nil {
		line("bundle content digest", *d.BundleContentDigest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if d.Protected == nil {
		return nil
	}
	switch {
	case d.Protected.StderrTail == nil:
		_, err := fmt.Fprintln(w, "flow stderr: none kept for this run")
		return err
	case *d.Protected.StderrTail == "":
		_, err := fmt.Fprintln(w, "flow stderr: empty (Flow printed nothing on stderr)")
		return err
	}
	fmt.Fprintf(w, "flow stderr (last %d bytes kept):\n", d.Protected.StderrTailBytes)
	_, err := io.WriteString(w, terminalSafe(*d.Protected.StderrTail))
	return err
}

// terminalSafe renders text from Flow for a terminal: newlines and tabs
// stay, every other control character (an escape sequence could rewrite
// the screen or the title) is shown as \xNN or \u{NNNN}; the text ends
// with a newline.
func terminalSafe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case (r >= 0x80 && r <= 0x9f) || r == '\u2028' || r == '\u2029' || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

func humanStamp(s *string) string {
	if s == nil {
		return "-"
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return *s
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func humanDuration(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return (time.Duration(*ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func humanExit(c *int) string {
	if c == nil {
		return "-"
	}
	if *c < 0 {
		return fmt.Sprintf("%d (killed by signal %d)", *c, -*c)
	}
	return strconv.Itoa(*c)
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// truncate keeps at most n characters of s for a message.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// completeRunIDs completes RUN_ID from the runs folder (newest first);
// nothing when it cannot be read safely.
func completeRunIDs(c *cobra.Command, o *runsOpts) []string {
	st, _, _, err := openRuns(o)
	if err != nil {
		return nil
	}
	defer st.Close()
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	l, err := st.List(ctx)
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(l.Runs))
	for _, r := range l.Runs {
		ids = append(ids, r.RunID+"\t"+r.Status()+" "+r.WorkflowID)
	}
	return ids
}
