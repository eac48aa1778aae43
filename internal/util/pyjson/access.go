package pyjson

import (
	"iter"
	"strings"
	"unsafe"
)

// Root is the handle of the top-level value (None when nothing is parsed).
func (d *Doc) Root() V {
	if len(d.toks) == 0 {
		return None
	}
	return 0
}

// Kind returns the kind of v; Invalid for None.
func (d *Doc) Kind(v V) Kind {
	if v < 0 || int(v) >= len(d.toks) {
		return Invalid
	}
	return d.toks[v].kind
}

// IsNull reports whether v is absent or null.
func (d *Doc) IsNull(v V) bool { k := d.Kind(v); return k == Invalid || k == Null }

// IsFloat reports whether v is a number token with '.', 'e' or 'E'.
func (d *Doc) IsFloat(v V) bool { return d.Kind(v) == Number && d.toks[v].flags&fFloat != 0 }

// IsInt reports whether v is an integer number token.
func (d *Doc) IsInt(v V) bool { return d.Kind(v) == Number && d.toks[v].flags&fFloat == 0 }

// True reports whether v is the literal true.
func (d *Doc) True(v V) bool { return d.Kind(v) == Bool && d.toks[v].flags&fTrue != 0 }

// False reports whether v is the literal false.
func (d *Doc) False(v V) bool { return d.Kind(v) == Bool && d.toks[v].flags&fTrue == 0 }

// Len returns the element count of an array or the member count of an
// object, else 0.
func (d *Doc) Len(v V) int {
	if k := d.Kind(v); k == Array || k == Object {
		return int(d.toks[v].n)
	}
	return 0
}

// Bytes returns the decoded bytes of a string or the token of a number (no
// copy: valid until the next Parse), else nil.
func (d *Doc) Bytes(v V) []byte {
	switch d.Kind(v) {
	case String:
		return d.keyBytes(uint32(v))
	case Number:
		t := &d.toks[v]
		return d.src[t.off:t.end]
	}
	return nil
}

// Str returns a copy of the decoded string v, or "" when v is not a string.
func (d *Doc) Str(v V) string {
	if d.Kind(v) != String {
		return ""
	}
	return string(d.keyBytes(uint32(v)))
}

// StrIs reports whether v is a string equal to s.
func (d *Doc) StrIs(v V, s string) bool {
	return d.Kind(v) == String && string(d.keyBytes(uint32(v))) == s
}

// Raw returns the source bytes of v (no copy), or nil for None.
func (d *Doc) Raw(v V) []byte {
	if d.Kind(v) == Invalid {
		return nil
	}
	t := &d.toks[v]
	return d.src[t.off:t.end]
}

// Offset returns the byte offset of v in the source.
func (d *Doc) Offset(v V) int {
	if d.Kind(v) == Invalid {
		return 0
	}
	return int(d.toks[v].off)
}

func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Member returns the key token and value of the member named key of object
// obj, or None, None. Lookup is a binary search over the sorted keys.
func (d *Doc) Member(obj V, key string) (k, v V) {
	if d.Kind(obj) != Object {
		return None, None
	}
	t := &d.toks[obj]
	keys := d.perm[t.p : t.p+t.n]
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(view(d.keyBytes(keys[m])), key); {
		case c == 0:
			return V(keys[m]), V(keys[m] + 1)
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return None, None
}

// Get returns the value of member key of object obj, or None.
func (d *Doc) Get(obj V, key string) V {
	_, v := d.Member(obj, key)
	return v
}

// Elems yields the elements of array v in order (nothing for a non-array).
func (d *Doc) Elems(v V) iter.Seq[V] {
	return func(yield func(V) bool) {
		if d.Kind(v) != Array {
			return
		}
		n := d.toks[v].n
		e := uint32(v) + 1
		for range n {
			if !yield(V(e)) {
				return
			}
			e = d.next(e)
		}
	}
}

// Members yields the key tokens and values of object v in source order
// (nothing for a non-object). [Doc.Str] and [Doc.Bytes] read a key token.
func (d *Doc) Members(v V) iter.Seq2[V, V] {
	return func(yield func(V, V) bool) {
		if d.Kind(v) != Object {
			return
		}
		n := d.toks[v].n
		k := uint32(v) + 1
		for range n {
			if !yield(V(k), V(k+1)) {
				return
			}
			k = d.next(k + 1)
		}
	}
}

// Omit marks the member whose key token is k so that the canonical writer
// leaves it out. It lasts until the next Parse.
func (d *Doc) Omit(k V) {
	if d.Kind(k) == String {
		d.toks[k].flags |= fOmit
	}
}
