package bundle

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// StepIDs returns the ids a run of the plaintext bundle in dir can name as
// its next step: every steps[*].id, and every state name and state step id
// of program.states and of each subflows.*.states, sorted, without
// duplicates (a step without an id contributes ""). It reads dir/workflow.json only (never through a
// symlink, at most [fsutil.WorkflowJSON] bytes) and does not verify the
// bundle: call it on a bundle [Load] verified.
//
// Errors: [ErrNotABundle] when there is no plaintext workflow.json (a sealed
// bundle has none), [ErrUnsafePath] for a symlink, [ErrUnreadable] when it
// cannot be read, [ErrInvalidJSON] when it is not one JSON object whose
// step and state ids are strings. Error texts name no path.
func StepIDs(ctx context.Context, dir string) ([]string, error) {
	data, err := fsutil.ReadFile(ctx, filepath.Join(dir, markerPlain), fsutil.WorkflowJSON, fsutil.NoFollow)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fsutil.ErrNotRegular):
		return nil, ErrNotABundle
	case errors.Is(err, fsutil.ErrSymlink):
		return nil, ErrUnsafePath
	case err != nil:
		return nil, ErrUnreadable
	}
	type states map[string]struct {
		Step *struct {
			ID string `json:"id"`
		} `json:"step"`
	}
	var wf struct {
		Steps []struct {
			ID string `json:"id"`
		} `json:"steps"`
		Program *struct {
			States states `json:"states"`
		} `json:"program"`
		Subflows map[string]struct {
			States states `json:"states"`
		} `json:"subflows"`
	}
	if pyjson.Unmarshal(data, pyjson.Options{}, &wf) != nil {
		return nil, ErrInvalidJSON
	}
	var ids []string
	add := func(id string) { ids = append(ids, id) }
	for _, st := range wf.Steps {
		add(st.ID)
	}
	addStates := func(ss states) {
		for name, v := range ss {
			add(name)
			if v.Step != nil {
				add(v.Step.ID)
			}
		}
	}
	if wf.Program != nil {
		addStates(wf.Program.States)
	}
	for _, sf := range wf.Subflows {
		addStates(sf.States)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
