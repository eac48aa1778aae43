// Package labels reads the operator's `serve --labels FILE`: a map from opaque
// workflow id to a short label and description that the operator chose to let
// leave the machine. Bundle data never fills it.
//
// The file is one strict JSON object (internal/util/pyjson rules: UTF-8, no
// duplicate keys, no BOM), at most [fsutil.Labels] bytes, read as a regular
// file (a FIFO or device is refused before reading):
//
//	{"mediaType": "application/vnd.openadapt.agent.labels+json;version=1",
//	 "workflows": {"<workflow id>": {"label": "…", "description": "…"}}}
//
// Unknown keys are refused at both levels; "workflows" is required (it may
// be {}); a label is at most [MaxLabel] and a description at most
// [MaxDescription] code points, and passes [CheckText] (no control, separator,
// bidirectional control, invisible formatting character or noncharacter); ""
// (or an absent field) means not set. Errors name the JSON pointer of the bad entry and never its text.
package labels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/fsutil"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// The format's fixed values.
const (
	MediaType      = "application/vnd.openadapt.agent.labels+json;version=1"
	MaxLabel       = 64  // code points
	MaxDescription = 280 // code points
)

// maxID bounds an id: serve's workflow-id syntax (internal/util/workflowid) with
// a duplicate suffix of at most 9 digits, so an id stays short.
const maxID = len("workflow_") + 24 + len("_") + 9

// ValidID reports whether id has serve's workflow-id syntax.
func ValidID(id string) bool { return len(id) <= maxID && workflowid.Valid(id) }

// Entry is one workflow's operator text; "" means not set.
type Entry struct {
	Label       string
	Description string
}

// Labels is a parsed labels file.
type Labels struct {
	// ByID holds every entry, including those with nothing set.
	ByID map[string]Entry
	// IDs lists the ids in file order.
	IDs []string
}

// Get returns the entry of id (the zero Entry when there is none).
func (l *Labels) Get(id string) Entry {
	if l == nil {
		return Entry{}
	}
	return l.ByID[id]
}

// Unknown counts the ids of l for which known is false.
func (l *Labels) Unknown(known func(id string) bool) int {
	if l == nil {
		return 0
	}
	n := 0
	for _, id := range l.IDs {
		if !known(id) {
			n++
		}
	}
	return n
}

// ErrInvalid is wrapped by every format error.
var ErrInvalid = errors.New("invalid labels file")

// Error is a format error: the JSON pointer of the bad value (or "" for the
// document) and the problem. It never carries text from the file.
type Error struct {
	Pointer string
	Problem string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return e.Problem
	}
	return e.Pointer + ": " + e.Problem
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

func bad(ptr, format string, a ...any) *Error {
	return &Error{Pointer: ptr, Problem: fmt.Sprintf(format, a...)}
}

// Read reads and parses the labels file at path: a regular file of at most
// [fsutil.Labels] bytes (refused before reading otherwise).
func Read(ctx context.Context, path string) (*Labels, error) {
	data, err := fsutil.ReadFile(ctx, path, fsutil.Labels)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse parses a labels document.
func Parse(data []byte) (*Labels, error) {
	d, err := pyjson.Parse(data, pyjson.Options{MaxDepth: 8, MaxIntDigits: 32, Floats: pyjson.FloatRefuse})
	if err != nil {
		var se *pyjson.SyntaxError
		if errors.As(err, &se) {
			return nil, bad("", "not strict JSON (%s at byte %d)", se.Msg, se.Offset)
		}
		return nil, bad("", "not strict JSON")
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object {
		return nil, bad("", "not a JSON object")
	}
	var mediaType, workflows pyjson.V = pyjson.None, pyjson.None
	for k, v := range d.Members(root) {
		switch {
		case d.StrIs(k, "mediaType"):
			mediaType = v
		case d.StrIs(k, "workflows"):
			workflows = v
		default:
			return nil, bad("", "unknown top-level key (only mediaType and workflows are allowed)")
		}
	}
	switch {
	case mediaType == pyjson.None:
		return nil, bad("/mediaType", "missing")
	case d.Kind(mediaType) != pyjson.String || !d.StrIs(mediaType, MediaType):
		return nil, bad("/mediaType", "must be %q", MediaType)
	case workflows == pyjson.None:
		return nil, bad("/workflows", "missing")
	case d.Kind(workflows) != pyjson.Object:
		return nil, bad("/workflows", "not an object")
	}
	l := &Labels{ByID: make(map[string]Entry, d.Len(workflows))}
	i := 0
	for k, v := range d.Members(workflows) {
		id := d.Str(k)
		if !ValidID(id) {
			// The key is not an id: name its position, never its text.
			return nil, bad("/workflows", "member %d: key is not a workflow id (workflow_<24 hex>[_N])", i+1)
		}
		ptr := "/workflows/" + id
		e, perr := parseEntry(d, v, ptr)
		if perr != nil {
			return nil, perr
		}
		l.ByID[id] = e
		l.IDs = append(l.IDs, id)
		i++
	}
	return l, nil
}

func parseEntry(d *pyjson.Doc, v pyjson.V, ptr string) (Entry, *Error) {
	var e Entry
	if d.Kind(v) != pyjson.Object {
		return e, bad(ptr, "not an object")
	}
	for k, fv := range d.Members(v) {
		var dst *string
		var max int
		var field string
		switch {
		case d.StrIs(k, "label"):
			dst, max, field = &e.Label, MaxLabel, "label"
		case d.StrIs(k, "description"):
			dst, max, field = &e.Description, MaxDescription, "description"
		default:
			return e, bad(ptr, "unknown key (only label and description are allowed)")
		}
		fp := ptr + "/" + field
		if d.Kind(fv) != pyjson.String {
			return e, bad(fp, "not a string")
		}
		s := d.Str(fv)
		if n := utf8.RuneCountInString(s); n > max {
			return e, bad(fp, "%d code points, at most %d allowed", n, max)
		}
		if err := CheckText(s); err != nil {
			return e, bad(fp, "%s", err)
		}
		*dst = s
	}
	return e, nil
}

// Match reports whether the lowercased term t is a substring of e's label
// or description (case-insensitive).
func (e Entry) Match(t string) bool {
	return (e.Label != "" && strings.Contains(strings.ToLower(e.Label), t)) ||
		(e.Description != "" && strings.Contains(strings.ToLower(e.Description), t))
}
