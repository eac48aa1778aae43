package pyjson

import "encoding/json"

// Unmarshal decodes data into v (as encoding/json does) after checking it
// is one complete document under opt: strict UTF-8, no duplicate key at any
// depth, bounded nesting, nothing after it. encoding/json alone would take
// the last of two equal keys and replace invalid UTF-8, so the same bytes
// could mean one thing to it and another to Python's json.loads (or to a
// second reader); this project's own state files are read this way. The
// error is pyjson's [*SyntaxError] (a byte offset, never content) or
// encoding/json's type error, which names a field, never a value.
func Unmarshal(data []byte, opt Options, v any) error {
	var d Doc
	if err := d.Parse(data, opt); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}
