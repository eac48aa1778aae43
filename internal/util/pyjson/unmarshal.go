package pyjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Unmarshal is the one way this project decodes JSON into Go structs (its
// own files, and Flow's where a struct reads them). It checks that data is
// one complete document under opt (strict UTF-8, no duplicate key at any
// depth, bounded nesting, nothing after it), then that every object key
// decoded into a struct names one of its fields exactly: a key that
// differs from a field's name only in case (or by another Unicode case
// fold) is refused, open format or closed, and with opt.Closed a key that
// names no field at all is refused too. Only then does encoding/json
// assign the values; its case-insensitive field match can no longer apply,
// so the document means the same to it as to a case-sensitive reader
// (Python's json.loads, Flow, another tool): {"status":"halt",
// "Status":"success"} is an error, never a success.
//
// Keys inside maps, json.RawMessage, interface values and types with their
// own UnmarshalJSON or UnmarshalText are data, not fields. The error is
// pyjson's [*SyntaxError] (a byte offset, never content) or encoding/json's
// type error, which names a field, never a value.
func Unmarshal(data []byte, opt Options, v any) error {
	var d Doc
	if err := d.Parse(data, opt); err != nil {
		return err
	}
	if t := reflect.TypeOf(v); t != nil {
		if err := d.checkKeys(d.Root(), t, opt.Closed); err != nil {
			return err
		}
	}
	return json.Unmarshal(data, v)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether values of t decode themselves.
func opaque(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// checkKeys walks v against the Go type t it will be decoded into.
func (d *Doc) checkKeys(v V, t reflect.Type, closed bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if opaque(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if d.Kind(v) != Object {
			return nil // encoding/json reports the type mismatch
		}
		fs := fieldsOf(t)
		for k, mv := range d.Members(v) {
			name := d.Str(k)
			ft, ok := fs.byName[name]
			if !ok {
				for _, n := range fs.names {
					if strings.EqualFold(n, name) {
						return &SyntaxError{Msg: "object key differs from a known field only in case", Offset: d.Offset(k)}
					}
				}
				if closed {
					return &SyntaxError{Msg: "unknown object key", Offset: d.Offset(k)}
				}
				continue
			}
			if err := d.checkKeys(mv, ft, closed); err != nil {
				return err
			}
		}
	case reflect.Map:
		if d.Kind(v) == Object {
			for _, mv := range d.Members(v) {
				if err := d.checkKeys(mv, t.Elem(), closed); err != nil {
					return err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if d.Kind(v) == Array {
			for e := range d.Elems(v) {
				if err := d.checkKeys(e, t.Elem(), closed); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// structFields are the JSON names of a struct's fields, as encoding/json
// matches them (tag name or Go name; embedded structs flattened; "-"
// skipped), with each field's type.
type structFields struct {
	byName map[string]reflect.Type
	names  []string
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	fs := &structFields{byName: map[string]reflect.Type{}}
	var add func(t reflect.Type, depth int)
	add = func(t reflect.Type, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			ft := sf.Type
			if sf.Anonymous && name == "" {
				et := ft
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && depth < 16 {
					add(et, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if _, dup := fs.byName[name]; !dup {
				fs.names = append(fs.names, name)
			}
			fs.byName[name] = ft
		}
	}
	add(t, 0)
	f, _ := fieldCache.LoadOrStore(t, fs)
	return f.(*structFields)
}
