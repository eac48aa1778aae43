package bundle

import (
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// flowJSON are Flow's input rules (docs/bundle.md, Canonical JSON): no leading BOM,
// valid UTF-8, no lone surrogate escape, no duplicate key at any depth,
// finite floats, integers of at most CPython's 4300 digits (Flow cannot load
// longer ones), nesting at most 1000, nothing after the value.
var flowJSON = pyjson.Options{MaxIntDigits: pyjson.PythonIntMaxDigits}

// maxDepth bounds the omission walker's predicate recursion like the parser.
const maxDepth = pyjson.DefaultMaxDepth

var docPool = sync.Pool{New: func() any { return new(pyjson.Doc) }}

// parseObject parses data into d under Flow's rules; the top level must be
// an object. Errors carry byte offsets only, never content.
func parseObject(d *pyjson.Doc, data []byte) error {
	if err := d.Parse(data, flowJSON); err != nil {
		return err
	}
	if d.Kind(d.Root()) != pyjson.Object {
		return &pyjson.SyntaxError{Msg: "top level is not an object", Offset: 0}
	}
	return nil
}

// CanonicalJSON parses data strictly (the input rules of docs/bundle.md,
// Canonical JSON)
// and returns Flow's canonical form: Python
// json.dumps(sort_keys=True, separators=(",",":"), ensure_ascii=False), with
// floats spelled as Python's repr and integers kept exact. Any JSON value is
// accepted at the top level. Errors wrap [ErrInvalidJSON] and carry byte
// offsets, never content.
func CanonicalJSON(data []byte) ([]byte, error) {
	d := docPool.Get().(*pyjson.Doc)
	defer docPool.Put(d)
	if err := d.Parse(data, flowJSON); err != nil {
		return nil, &Error{Kind: KindInvalidJSON, cause: err}
	}
	out, err := d.AppendCanonical(make([]byte, 0, len(data)), d.Root())
	if err != nil {
		return nil, &Error{Kind: KindInvalidJSON, cause: err}
	}
	return out, nil
}
