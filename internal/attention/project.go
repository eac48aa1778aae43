package attention

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// Read limits. Reports follow flowrun's 16 MiB; pause and capability files
// are small JSON objects.
const (
	maxReport     = flowrun.MaxReportSize
	maxPause      = 4 << 20
	maxCapability = 1 << 20
)

// knownCategories are the 12 pause categories kept as is (docs/attended.md,
// "The queue").
var knownCategories = map[string]bool{
	"effect_refuted": true, "effect_indeterminate": true, "effect_escalated": true,
	"placeholder_effect": true, "effect_unverifiable": true, "unmet_guard": true,
	"disambiguation": true, "identity": true, "postcondition": true, "resolution": true,
	"human_required": true, "halt": true,
}

// challengeCategories are the raw values that may become human_required.
var challengeCategories = map[string]bool{"": true, "challenge": true, "authentication": true, "mfa": true}

// humanMarkers are matched case-insensitively as substrings.
var humanMarkers = []string{
	"captcha", "verify you are human", "verify that you are human", "i'm not a robot",
	"i am not a robot", "unusual traffic", "press and hold", "multi-factor", "multifactor",
	"two-factor", "one-time passcode", "one-time code", "enter the verification code",
	"enter verification code", "code sent to", "session expired", "sign in again", "log in again",
}

// copyTable is this project's headline / next_action copy, not Flow's.
var copyTable = map[string][2]string{
	"human_required":       {"A person must act in the application before the workflow can go on.", "Finish the sign-in, challenge, or verification yourself in the live application; OpenAdapt never answers it, and Continue only re-checks the result before resuming."},
	"identity":             {"The target record's identity could not be confirmed.", "Check the live application and the protected evidence on this computer."},
	"disambiguation":       {"Several targets matched, so none was chosen.", "Open or select the intended target in the live application."},
	"effect_refuted":       {"The expected change in the system of record was not confirmed.", "Check the destination record before deciding what to do."},
	"effect_indeterminate": {"The change in the system of record could not be checked.", "Restore the verifier or inspect the destination record."},
	"effect_escalated":     {"The result could not be reconciled safely.", "Review and correct the destination record before continuing."},
	"effect_unverifiable":  {"This write has no usable independent check.", "Configure the deployment's verifier before continuing."},
	"placeholder_effect":   {"This workflow still lacks a deployment-specific effect binding.", "Complete and certify the binding before continuing."},
	"unmet_guard":          {"The application was not in the expected starting state.", "Prepare the live application, then review the paused run."},
	"postcondition":        {"The application did not reach the expected state.", "Inspect the live application before deciding what to do."},
	"resolution":           {"The compiled target did not match exactly one element.", "Prepare the correct view or teach a reviewed repair."},
	"halt":                 {"The workflow stopped rather than guess.", "Review the protected evidence on this computer before acting."},
	"operator_review":      {"This run needs review by the local operator.", "Open the protected run details on this computer."},
}

// Headline returns the fixed headline of a category ("" for an unknown one).
func Headline(category string) string { return copyTable[category][0] }

// NextAction returns the fixed next action of a category ("" for an unknown one).
func NextAction(category string) string { return copyTable[category][1] }

// project builds the item of one run directory, or ok=false when the
// directory produces none (docs/attended.md, "The queue": Inclusion).
func (s *scanner) project(rel string) (Item, bool) {
	dir, ok := s.inside(rel)
	if !ok {
		return Item{}, false
	}
	rep := loadReportFacts(filepath.Join(dir, "report.json")) // nil unless valid
	var pause *pyjson.Doc                                     // nil unless an object
	if data, err := readRegular(filepath.Join(dir, "pending_escalation.json"), maxPause); err == nil {
		pause, _ = flowrun.ParseObject(data)
	}
	encrypted := false
	if fi, err := os.Lstat(filepath.Join(dir, "pending_escalation.json.enc")); err == nil && fi.Mode().IsRegular() {
		encrypted = true
	}

	var facts reportFacts
	if rep != nil {
		facts = *rep
	}
	needsReview := facts.outcome != "" && facts.outcome != flowrun.OutcomeVerified
	anyPause := pause != nil || encrypted
	switch {
	case rep != nil && facts.success && !needsReview && !anyPause:
		return Item{}, false
	case rep == nil && !anyPause:
		return Item{}, false
	case !anyPause && !facts.hasHalt && !needsReview:
		return Item{}, false
	}

	it := Item{
		ID:                   ID(rel),
		CreatedAt:            facts.createdAt,
		EncryptedPause:       encrypted,
		ObservedTextCount:    facts.observed,
		CompletedIntentCount: facts.completed,
		BeforeArtifactID:     facts.before,
		AfterArtifactID:      facts.after,
	}

	// Category.
	switch {
	case needsReview && pause == nil:
		it.Category = "operator_review"
	default:
		// A category that is not a string counts as "" (Flow:
		// `raw if isinstance(raw, str) else ""`).
		raw := ""
		if pause != nil {
			raw = pause.Str(pause.Get(pause.Root(), "category"))
		}
		switch {
		case knownCategories[raw]:
			it.Category = raw
		case challengeCategories[raw] && (facts.haltMarked || pauseMarked(pause)):
			it.Category = "human_required"
		default:
			it.Category = "operator_review"
		}
	}
	it.Headline, it.NextAction = Headline(it.Category), NextAction(it.Category)
	it.HumanRequired = it.Category == "human_required"

	// Status.
	pauseStatus := ""
	if pause != nil {
		pauseStatus = pause.Str(pause.Get(pause.Root(), "status"))
	}
	switch {
	case pause != nil:
		switch pauseStatus {
		case "pending", "approved", "rejected":
			it.Status = pauseStatus
		default:
			it.Status = "pending"
		}
	case needsReview:
		it.Status = strings.ToLower(facts.outcome)
	case encrypted:
		it.Status = "encrypted"
	default:
		it.Status = "halted"
	}
	it.DurablyPaused = anyPause && pauseStatus != "rejected"

	it.Capability = capabilitySummary(dir)
	return it, true
}

// reportFacts is everything the projector needs from a valid report.
type reportFacts struct {
	success    bool    // success is exactly true
	outcome    string  // execution_outcome, "" when null
	hasHalt    bool    // halt is an object
	haltMarked bool    // the halt reason or an observed text holds a human-required marker
	createdAt  *string // normalized started_at
	observed   int     // len(halt.observed_texts)
	completed  int     // len(halt.completed_intents)
	before     *string // artifact ids of the last failing result
	after      *string
}

// factsOf derives the facts of a report that flowrun.CheckReport accepted.
func factsOf(d *pyjson.Doc) *reportFacts {
	r := d.Root()
	f := &reportFacts{success: d.True(d.Get(r, "success"))}
	f.outcome = d.Str(d.Get(r, "execution_outcome"))
	if v := d.Get(r, "started_at"); d.Kind(v) == pyjson.String {
		if norm, ok := normalizeISO(d.Str(v)); ok {
			f.createdAt = &norm
		}
	}
	if halt := d.Get(r, "halt"); d.Kind(halt) == pyjson.Object {
		f.hasHalt = true
		f.haltMarked = haltMarked(d, halt)
		f.observed = arrayLen(d, d.Get(halt, "observed_texts"))
		f.completed = arrayLen(d, d.Get(halt, "completed_intents"))
	}
	f.before, f.after = artifactIDs(d, d.Get(r, "results"))
	return f
}

// pauseMarked reports whether the pause reason holds a human-required marker.
func pauseMarked(pause *pyjson.Doc) bool {
	if pause == nil {
		return false
	}
	return markedString(pause, pause.Get(pause.Root(), "reason"))
}

// haltMarked reports whether the halt reason or any observed text holds a
// human-required marker.
func haltMarked(d *pyjson.Doc, halt pyjson.V) bool {
	if markedString(d, d.Get(halt, "reason")) {
		return true
	}
	for o := range d.Elems(d.Get(halt, "observed_texts")) {
		if markedString(d, o) {
			return true
		}
	}
	return false
}

// markedString reports whether v is a string holding a human-required marker.
func markedString(d *pyjson.Doc, v pyjson.V) bool {
	return d.Kind(v) == pyjson.String && hasMarker(d.Str(v))
}

func hasMarker(text string) bool {
	low := strings.ToLower(text)
	for _, m := range humanMarkers {
		if strings.Contains(low, m) {
			return true
		}
	}
	return hasToken(low, "2fa") || hasToken(low, "mfa")
}

// hasToken finds tok not adjacent to a letter or digit.
func hasToken(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(tok)
		before, after := ' ', ' '
		if start > 0 {
			before = lastRune(s[:start])
		}
		if end < len(s) {
			after = []rune(s[end:])[0]
		}
		if !isAlnum(before) && !isAlnum(after) {
			return true
		}
		i = start + 1
	}
}

func lastRune(s string) rune {
	r := []rune(s)
	return r[len(r)-1]
}

// isAlnum is Flow's token boundary class [a-z0-9] (on lowercased text).
func isAlnum(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') }

// artifactIDs picks the last failing result (not ok, not skipped, not
// exception_handled), preferring one other than the synthetic <terminal>,
// and names its screenshots step-NNN-before / step-NNN-after.
func artifactIDs(d *pyjson.Doc, results pyjson.V) (*string, *string) {
	pick, terminal := -1, -1
	var picked, terminalV pyjson.V
	i := -1
	for r := range d.Elems(results) {
		i++
		if d.Kind(r) != pyjson.Object || d.True(d.Get(r, "ok")) || d.True(d.Get(r, "skipped")) ||
			d.True(d.Get(r, "exception_handled")) {
			continue
		}
		if d.StrIs(d.Get(r, "step_id"), "<terminal>") {
			terminal, terminalV = i, r
			continue
		}
		pick, picked = i, r
	}
	if pick < 0 {
		pick, picked = terminal, terminalV
	}
	if pick < 0 {
		return nil, nil
	}
	var before, after *string
	if s := d.Str(d.Get(picked, "before_png")); s != "" {
		v := fmt.Sprintf("step-%03d-before", pick+1)
		before = &v
	}
	if s := d.Str(d.Get(picked, "after_png")); s != "" {
		v := fmt.Sprintf("step-%03d-after", pick+1)
		after = &v
	}
	return before, after
}

// readRegular reads a regular, non-symlink file of at most limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	data, _, err := readRegularInfo(path, limit)
	return data, err
}

// readRegularInfo is readRegular that also returns the information of the
// file it read, through the project's one bounded read (internal/util/fsutil:
// no-follow, non-blocking open, the type and size checked on the opened
// descriptor, so no swap after a check slips anything in).
func readRegularInfo(path string, limit int64) ([]byte, os.FileInfo, error) {
	lim := fsutil.Limit{Kind: "run file", Max: limit}
	f, fi, err := fsutil.Open(path, lim, fsutil.NoFollow)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := fsutil.ReadAll(context.Background(), f, fi.Size(), lim)
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// arrayLen is the length of array v, else 0.
func arrayLen(d *pyjson.Doc, v pyjson.V) int {
	if d.Kind(v) != pyjson.Array {
		return 0
	}
	return d.Len(v)
}
