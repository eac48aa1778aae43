package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
)

// The `serve --labels FILE` format (the lead's decision, notes/LABELS.md):
// a strict JSON object {"mediaType": LabelsMediaType, "workflows": {<id>:
// {"label": …, "description": …}}}, label at most LabelMaxRunes and
// description at most LabelDescriptionMaxRunes code points, "" meaning not set.
// serve reads it; skill emit writes a starter with empty texts. These
// constants are the one place the starter takes the format from.
const (
	LabelsMediaType          = "application/vnd.openadapt.agent.labels+json;version=1"
	LabelMaxRunes            = 64
	LabelDescriptionMaxRunes = 280
)

// emptyLabelsEntry is a starter entry: both fields present and not set.
const emptyLabelsEntry = `{"label": "", "description": ""}`

// LabelsStarter renders a labels file for the workflow ids (sorted,
// duplicates once) with empty labels and descriptions, indented by two
// spaces and ending with a newline.
func LabelsStarter(ids []string) []byte {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	var b bytes.Buffer
	b.WriteString("{\n  \"mediaType\": ")
	mt, _ := json.Marshal(LabelsMediaType)
	b.Write(mt)
	b.WriteString(",\n  \"workflows\": {")
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(id)
		fmt.Fprintf(&b, "\n    %s: %s", k, emptyLabelsEntry)
	}
	if len(ids) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}\n}\n")
	return b.Bytes()
}

// ErrLabelsExist: the labels starter file exists and force was not given.
var ErrLabelsExist = fmt.Errorf("%w: labels file exists", ErrConflict)

// CheckLabelsStarter refuses, before anything is emitted, a starter path
// that exists (any kind of entry, a link included) unless force, or whose
// folder is missing.
func CheckLabelsStarter(path string, force bool) error {
	r, base, err := labelsRoot(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := r.Lstat(base); err == nil && !force {
		return fmt.Errorf("%w: %s already exists; pass --force to replace it", ErrLabelsExist, path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// WriteLabelsStarter writes [LabelsStarter] of ids to path all or nothing
// (a temporary sibling renamed over it through an [fsutil.Root] at path's
// folder: a link at path is replaced, never followed), refusing an
// existing path unless force.
func WriteLabelsStarter(path string, ids []string, force bool) error {
	if err := CheckLabelsStarter(path, force); err != nil {
		return err
	}
	r, base, err := labelsRoot(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.WriteFile(base, LabelsStarter(ids), 0o644); err != nil {
		return unsafePath(err)
	}
	return nil
}

func labelsRoot(path string) (*fsutil.Root, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	dir, base := filepath.Split(abs)
	if base == "" || base == "." || base == ".." {
		return nil, "", fmt.Errorf("%w: --labels-starter %s is not a file name", ErrUsage, path)
	}
	r, err := fsutil.OpenRoot(dir, "")
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s: %w", ErrPath, filepath.Dir(abs), unwrapPathError(err))
	}
	return r, base, nil
}
