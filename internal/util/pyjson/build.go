package pyjson

import (
	"encoding/json"
	"unsafe"
)

// Value builds the tree of v: map[string]any for objects, []any for arrays,
// string, json.Number (the exact token), bool and nil. Every string and
// number is a substring of one arena holding just their bytes, so building
// costs one allocation per container, not per string. The tree shares
// nothing with d's buffers and stays valid after the next Parse.
func (d *Doc) Value(v V) any {
	if d.Kind(v) == Invalid {
		return nil
	}
	end := d.next(uint32(v))
	size := 0
	for i := uint32(v); i < end; i++ {
		switch t := &d.toks[i]; t.kind {
		case String:
			size += len(d.keyBytes(i))
		case Number:
			size += int(t.end - t.off)
		}
	}
	// The arena is written once, below, and never again: the strings over
	// it are immutable.
	d.arena = make([]byte, 0, size)
	x, _ := d.build(uint32(v))
	d.arena = nil
	return x
}

// str appends b to the arena and returns it as a string over the arena.
func (d *Doc) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	n := len(d.arena)
	d.arena = append(d.arena, b...)
	return unsafe.String(&d.arena[n], len(b))
}

// build returns the tree of token v and the index after its subtree.
func (d *Doc) build(v uint32) (any, uint32) {
	t := &d.toks[v]
	switch t.kind {
	case Null:
		return nil, v + 1
	case Bool:
		return t.flags&fTrue != 0, v + 1
	case Number:
		return json.Number(d.str(d.src[t.off:t.end])), v + 1
	case String:
		return d.str(d.keyBytes(v)), v + 1
	case Array:
		l := make([]any, t.n)
		e := v + 1
		for i := range l {
			l[i], e = d.build(e)
		}
		return l, t.a
	default:
		m := make(map[string]any, t.n)
		k := v + 1
		for range t.n {
			var x any
			x, next := d.build(k + 1)
			m[d.str(d.keyBytes(k))] = x
			k = next
		}
		return m, t.a
	}
}
