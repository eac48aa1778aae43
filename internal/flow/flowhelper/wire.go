package flowhelper

import (
	"errors"
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// frameOptions are the rules every JSON document the helper side hands Go
// is read under (frames, and the files Flow and serve write): the project's
// one strict core (internal/util/pyjson). The helper writes frames from Python
// dicts with json.dumps(ensure_ascii=True, allow_nan=False), so a conforming
// frame never has a duplicate key (at any depth), invalid UTF-8, a lone
// surrogate escape, a float that overflows or an integer Python could not
// print; each of those is refused, fail-closed, rather than read the way
// encoding/json would (last duplicate wins, U+FFFD for bad bytes) while
// Python read something else. Floats are kept as tokens (nothing here
// needs a canonical form); the one float field, elapsed_ms, is checked by
// its reader.
var frameOptions = pyjson.Options{Floats: pyjson.FloatRefuse, MaxIntDigits: pyjson.PythonIntMaxDigits}

var errNotObject = errors.New("not a JSON object")

// object is one JSON object of a parsed document: the document and the
// object's handle. Each frame is parsed into its own Doc over its own copy
// of the line, so an object stays valid for as long as it is held.
type object struct {
	d *pyjson.Doc
	v pyjson.V
}

// parseObject parses b, one JSON object under [frameOptions]. The error
// names the problem and a byte offset, never input content. b must not
// change while the object is in use.
func parseObject(b []byte) (object, error) {
	d, err := pyjson.Parse(b, frameOptions)
	if err != nil {
		return object{}, err
	}
	if d.Kind(d.Root()) != pyjson.Object {
		return object{}, errNotObject
	}
	return object{d, d.Root()}, nil
}

// get returns the value of member k, or pyjson.None.
func (o object) get(k string) pyjson.V { return o.d.Get(o.v, k) }

// has reports whether the object has member k.
func (o object) has(k string) bool { return o.get(k) != pyjson.None }

// closed reports whether the object's keys are exactly keys (distinct). A
// parsed object has no duplicate key, so its size and each key's presence
// decide it.
func (o object) closed(keys ...string) bool {
	if o.d.Kind(o.v) != pyjson.Object || o.d.Len(o.v) != len(keys) {
		return false
	}
	for _, k := range keys {
		if !o.has(k) {
			return false
		}
	}
	return true
}

// sub returns member k as an object.
func (o object) sub(k string) (object, bool) {
	v := o.get(k)
	return object{o.d, v}, o.d.Kind(v) == pyjson.Object
}

// str returns member k when it is a string.
func (o object) str(k string) (string, bool) {
	v := o.get(k)
	return o.d.Str(v), o.d.Kind(v) == pyjson.String
}

// strOrNull returns member k when it is a string or null ("" and false
// for null).
func (o object) strOrNull(k string) (s string, isString, ok bool) {
	v := o.get(k)
	switch o.d.Kind(v) {
	case pyjson.String:
		return o.d.Str(v), true, true
	case pyjson.Null:
		return "", false, true
	}
	return "", false, false
}

// boolean returns member k when it is true or false.
func (o object) boolean(k string) (b, ok bool) {
	v := o.get(k)
	return o.d.True(v), o.d.Kind(v) == pyjson.Bool
}

// integer returns member k when it is an integer that fits an int.
func (o object) integer(k string) (int, bool) {
	v := o.get(k)
	if !o.d.IsInt(v) {
		return 0, false
	}
	n, err := strconv.Atoi(string(o.d.Raw(v)))
	return n, err == nil
}

// isNull reports whether member k is present and null.
func (o object) isNull(k string) bool { return o.d.Kind(o.get(k)) == pyjson.Null }

// raw returns the object's source bytes.
func (o object) raw() []byte { return o.d.Raw(o.v) }

// errClosed is a result whose keys are not its closed schema's. It names
// no key: the helper's keys are input.
var errClosed = errors.New("the result's keys differ from its closed schema")

// closedResult checks that o's keys are exactly keys.
func closedResult(o object, keys ...string) error {
	if !o.closed(keys...) {
		return errClosed
	}
	return nil
}

// fieldError is a member of a closed result with the wrong type or value.
// Field is the schema's name for it, never input.
type fieldError struct{ Field string }

func (e *fieldError) Error() string { return "bad " + e.Field }
