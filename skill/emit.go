package skill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v2"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// EmitOptions configure [Emit]. Give exactly one of Bundle and FromFlowSkill.
type EmitOptions struct {
	// Bundle is a bundle folder; Flow's `emit-skill` writes the skill folder.
	Bundle string
	// FromFlowSkill is a folder Flow already emitted (or one this package
	// already wrapped); no Flow is needed.
	FromFlowSkill string
	// OutDir receives the skill at OutDir/<name>; it is created if missing.
	OutDir string
	// RunFlow runs Flow's emit-skill for Bundle (required with Bundle); this
	// package never starts Flow itself.
	RunFlow FlowEmitter
	// BundleOptions are passed to bundle.Load (tests pin the key there);
	// by default the key comes from OPENADAPT_BUNDLE_KEY.
	BundleOptions []bundle.Option
	// AllowLegacy accepts a legacy_unverified bundle (with a warning).
	AllowLegacy bool
	// AllowUnavailable emits a workflow serve lists as unavailable (for
	// example a reserved parameter name); the appendix then says no run
	// tool exists and names none.
	AllowUnavailable bool
	// Force replaces a different skill already at OutDir/<name>.
	Force bool
	// CardStarter also writes a starter workflow card,
	// bundle/openadapt-card.json, into the skill (docs/skills.md, Emit),
	// unless the bundle already has a card (then a warning says so).
	CardStarter bool
	// AgentVersion is written into the metadata.
	AgentVersion string
	// Warn receives warnings.
	Warn func(string)
}

// EmitResult describes an emitted skill. Every field is safe to print.
type EmitResult struct {
	SkillDir       string   `json:"skill_dir"`
	Name           string   `json:"name"`
	WorkflowID     string   `json:"workflow_id"`
	BundleVersion  string   `json:"bundle_version"`
	BundleStatus   string   `json:"bundle_status"`
	RequiredParams []string `json:"required_params"`
	// CardStarter is the starter card's path, "" when none was written.
	CardStarter string `json:"card_starter,omitempty"`
}

// ErrUnavailable is returned (wrapped in an [*UnavailableError]) when the
// workflow would be listed by serve as unavailable and AllowUnavailable is
// not set.
var ErrUnavailable = errors.New("workflow unavailable in serve")

// UnavailableError names serve's reason code (bundle.Unavailable).
type UnavailableError struct{ Reason bundle.Unavailable }

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s: serve lists this workflow as unavailable (%s), so no MCP run tool exists for it; fix it in Flow, or pass --allow-unavailable to emit a skill that names no tool", ErrUnavailable, e.Reason)
}

// Unwrap makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// ErrFlow is returned (wrapped) when Flow's emit-skill fails or cannot start.
var ErrFlow = errors.New("flow emit-skill failed")

// FlowEmitter runs Flow's `emit-skill` for [Emit]: Flow writes the skill
// folder of the bundle in bundleDir into outDir (both absolute; outDir is
// an empty private folder). A nil error means Flow exited 0; Emit then
// checks what it wrote. Any error is wrapped in [ErrFlow]: its text says
// what happened to Flow (not found, timed out, canceled, its exit code) and
// must not carry Flow's own output, which may hold protected data. The
// command layer supplies one that runs openadapt-flow as a child process.
type FlowEmitter func(ctx context.Context, bundleDir, outDir string) error

// Emit wraps a Flow skill folder (docs/skills.md, "Emit"): it verifies the
// bundle inside with the bundle package (refusing tampered, undecryptable and,
// without AllowLegacy, legacy bundles with an error wrapping [ErrBundle]),
// wraps SKILL.md ([Wrap]), normalises modes, validates the result and
// publishes it atomically at OutDir/<name>. A failure leaves nothing behind.
// A different skill already at OutDir/<name> is refused ([ErrConflict])
// unless Force is set.
func Emit(ctx context.Context, opt EmitOptions) (*EmitResult, error) {
	warn := opt.Warn
	if warn == nil {
		warn = func(string) {}
	}
	if (opt.Bundle == "") == (opt.FromFlowSkill == "") {
		return nil, errors.New("give exactly one of a bundle and a Flow skill folder")
	}
	// OutDir itself is the user's choice (made if missing); beneath it
	// nothing is written, renamed or removed through a link.
	if err := os.MkdirAll(opt.OutDir, 0o755); err != nil {
		return nil, err
	}
	root, err := fsutil.OpenRoot(opt.OutDir, "")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	src := opt.FromFlowSkill
	var input *bundle.Bundle
	if opt.Bundle != "" {
		// Step 1: verify the input before Flow ever sees it.
		b, err := loadBundle(opt.Bundle, opt, warn)
		if err != nil {
			return nil, err
		}
		input = b
		tmpRel, err := root.MkdirTemp(".", ".openadapt-emit-")
		if err != nil {
			return nil, err
		}
		defer root.RemoveAll(tmpRel)
		if src, err = runFlowEmit(ctx, opt, root.Join(tmpRel)); err != nil {
			return nil, err
		}
		// Step 4: Flow's copy must be the verified input, file for file.
		same, err := sameListing(opt.Bundle, filepath.Join(src, "bundle"))
		if err != nil {
			return nil, err
		}
		if !same {
			return nil, fmt.Errorf("%w: Flow's bundle copy differs from the verified input", ErrBundle)
		}
	}
	srcAbs, err := filepath.Abs(src)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(srcAbs)
	for _, f := range NameFindings(name, "") {
		if f.Severity == SeverityError {
			return nil, &FindingError{Finding: f}
		}
	}
	final := filepath.Join(opt.OutDir, name)
	stage, err := root.StageDir(name)
	if err != nil {
		return nil, err
	}
	defer stage.Abort()
	stageDir := stage.Path()
	if err := copyTree(ctx, srcAbs, root, stage.Rel); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(filepath.Join(stageDir, "bundle")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: the skill folder has no bundle/ folder", ErrLayout)
	}
	stageWarn := warn
	if input != nil {
		stageWarn = func(string) {} // already warned about the input
	}
	b, err := loadBundle(filepath.Join(stageDir, "bundle"), opt, stageWarn)
	if err != nil {
		return nil, err
	}
	if input != nil && input.ID != b.ID {
		return nil, fmt.Errorf("%w: Flow's bundle copy differs from the verified input", ErrBundle)
	}
	skillMD := filepath.Join(stageDir, "SKILL.md")
	if entries, err := os.ReadDir(stageDir); err != nil {
		return nil, err
	} else if f, ok := skillMDFinding(entries); !ok {
		return nil, &FindingError{Finding: f}
	}
	raw, err := readSkillMD(skillMD)
	if err != nil {
		return nil, err
	}
	// The names serve's run tool takes: a name outside serve's rule under
	// its alias (docs/bundle.md, Parameter aliases).
	params := b.DeclaredParams()
	for i, p := range params {
		params[i] = bundle.WireName(p)
	}
	slices.Sort(params)
	// One availability rule with serve (bundle.Availability): a workflow
	// serve would list as unavailable is refused unless AllowUnavailable
	// (a legacy bundle: AllowLegacy alone); the appendix then names no tool.
	reason := bundle.Availability(b)
	switch {
	case reason == bundle.Available:
	case reason == bundle.LegacyUnverifiedReason && opt.AllowLegacy:
	case opt.AllowUnavailable:
		warn(fmt.Sprintf("serve lists this workflow as unavailable (%s); the skill names no run tool", reason))
	default:
		return nil, &UnavailableError{Reason: reason}
	}
	res := &EmitResult{
		Name: name, WorkflowID: b.ID, BundleVersion: b.BundleVersion,
		BundleStatus: string(b.Integrity), RequiredParams: params,
	}
	out, warns, err := Wrap(raw, WrapInput{
		DirName: name, WorkflowID: b.ID, BundleVersion: b.BundleVersion, BundleStatus: res.BundleStatus,
		RequiredParams: params, AgentVersion: opt.AgentVersion, Unavailable: string(reason),
	})
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		warn(w)
	}
	if err := root.WriteFile(stage.Rel+"/SKILL.md", out, 0o644); err != nil {
		return nil, err
	}
	starter := false
	if opt.CardStarter {
		if starter, err = writeCardStarter(root, stage.Rel+"/bundle", b); err != nil {
			return nil, err
		}
		if !starter {
			warn("the bundle already has an " + cards.FileName + "; no starter card was written")
		}
	}
	rep, err := validateDir(stageDir, name)
	if err != nil {
		return nil, err
	}
	if err := rep.FirstError(); err != nil {
		return nil, fmt.Errorf("internal: emitted skill failed validation: %w", err)
	}

	// Publish: a different skill already there is replaced only when
	// mayReplace says so.
	replace, err := mayReplace(final, srcAbs, b.ID, opt.Force)
	if err != nil {
		return nil, err
	}
	if err := stage.Commit(replace, 0o755); err != nil {
		return nil, err
	}
	res.SkillDir, err = filepath.Abs(final)
	if starter {
		res.CardStarter = filepath.Join(res.SkillDir, "bundle", cards.FileName)
	}
	return res, err
}

// writeCardStarter writes the starter card (cards.Starter: empty texts,
// one input per declared parameter by Flow's own name) into the staged
// bundle folder rel, unless an entry of that name is already there
// (false).
func writeCardStarter(root *fsutil.Root, rel string, b *bundle.Bundle) (bool, error) {
	p := rel + "/" + cards.FileName
	if _, err := os.Lstat(root.Join(p)); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, root.WriteFile(p, cards.Starter(b.DeclaredParams()), 0o644)
}

// loadBundle verifies a bundle folder with the bundle package, exactly as
// `bundle verify` does.
func loadBundle(dir string, opt EmitOptions, warn func(string)) (*bundle.Bundle, error) {
	b, err := bundle.Load(dir, opt.BundleOptions...)
	if b == nil {
		return nil, &bundleError{msg: fmt.Sprintf("bundle cannot be loaded: %v", err), err: err}
	}
	switch b.Integrity {
	case bundle.Verified:
		return b, nil
	case bundle.LegacyUnverified:
		if !opt.AllowLegacy {
			return nil, &bundleError{
				msg: "bundle is legacy_unverified (no manifest, so not integrity-checked); pass --allow-legacy to wrap it anyway",
				err: fmt.Errorf("legacy_unverified"),
			}
		}
		warn("bundle is legacy_unverified: it is not integrity-checked, and serve lists it as unavailable with no run tool")
		return b, nil
	default:
		if err == nil {
			err = b.Err
		}
		return nil, &bundleError{msg: fmt.Sprintf("bundle failed verification (%s)", b.ErrorKind), err: err}
	}
}

// runFlowEmit runs opt.RunFlow into tmp and returns the one skill folder
// Flow wrote there.
func runFlowEmit(ctx context.Context, opt EmitOptions, tmp string) (string, error) {
	if opt.RunFlow == nil {
		return "", fmt.Errorf("%w: no Flow runner", ErrFlow)
	}
	absBundle, err := filepath.Abs(opt.Bundle)
	if err != nil {
		return "", err
	}
	absTmp, err := filepath.Abs(tmp)
	if err != nil {
		return "", err
	}
	if err := opt.RunFlow(ctx, absBundle, absTmp); err != nil {
		return "", fmt.Errorf("%w: %w", ErrFlow, err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return "", err
	}
	layout := fmt.Errorf("%w: unexpected Flow output layout", ErrLayout)
	if len(entries) != 1 || !entries[0].IsDir() {
		return "", layout
	}
	dir := filepath.Join(tmp, entries[0].Name())
	for _, want := range []struct {
		name string
		dir  bool
	}{{"SKILL.md", false}, {"bundle", true}} {
		fi, err := os.Lstat(filepath.Join(dir, want.name))
		if err != nil || fi.IsDir() != want.dir || fi.Mode()&fs.ModeSymlink != 0 {
			return "", layout
		}
	}
	return dir, nil
}

// sameListing compares the per-file sha256 listings of two folders.
func sameListing(a, b string) (bool, error) {
	la, err := listing(a)
	if err != nil {
		return false, err
	}
	lb, err := listing(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(la, lb), nil
}

func listing(root string) ([]byte, error) {
	entries, _, err := walkTree(root, walkOptions{})
	if err != nil {
		return nil, err
	}
	if err := hashEntries(root, entries, 2); err != nil {
		return nil, err
	}
	return sumsBytes(entries), nil
}

// mayReplace decides whether publishing replaces final: absent → false; our skill with the same workflow
// id, or the source of an in-place re-wrap → true; anything else needs force.
func mayReplace(final, src, id string, force bool) (bool, error) {
	fi, err := os.Lstat(final)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if srcFi, err := os.Stat(src); err == nil && os.SameFile(fi, srcFi) {
		return true, nil
	}
	if fi.IsDir() && workflowIDOf(final) == id {
		return true, nil
	}
	if force {
		return true, nil
	}
	return false, fmt.Errorf("%w: %s holds a different skill; pass --force to replace it", ErrConflict, final)
}

// workflowIDOf reads metadata.openadapt-workflow-id from dir/SKILL.md, or "".
func workflowIDOf(dir string) string {
	data, err := readSkillMD(filepath.Join(dir, "SKILL.md"))
	if err != nil {
		return ""
	}
	sf, err := ParseSkillFile(data)
	if err != nil {
		return ""
	}
	m, _ := sf.Get("metadata")
	ms, _ := m.(yaml.MapSlice)
	for _, it := range ms {
		if it.Key == MetaWorkflowID {
			s, _ := it.Value.(string)
			return s
		}
	}
	return ""
}
