package serve

import (
	"strconv"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// decodeCache parses the digest-cache file with the project's strict JSON
// core (internal/util/pyjson: strict UTF-8, duplicate keys refused, bounded
// depth and integers) into c. The shape is exactly what [rootCache.store]
// writes with encoding/json: every member of the right type, the
// always-written members present, nothing else. Any doubt is false and the
// whole file is ignored (an empty cache: every bundle verified in full).
func decodeCache(data []byte, c *cacheFile) bool {
	d, err := pyjson.Parse(data, pyjson.Options{MaxDepth: 4, MaxIntDigits: 18})
	if err != nil {
		return false
	}
	root := d.Root()
	if d.Kind(root) != pyjson.Object {
		return false
	}
	var have uint
	for k, v := range d.Members(root) {
		ok := true
		switch string(d.Bytes(k)) {
		case "v":
			have |= 1
			c.V, ok = intOf(d, v)
		case "root":
			have |= 2
			c.Root, ok = strOf(d, v)
		case "key_salt":
			c.KeySalt, ok = strOf(d, v)
		case "key_mac":
			c.KeyMAC, ok = strOf(d, v)
		case "bundles":
			have |= 4
			ok = d.Kind(v) == pyjson.Array
			if ok {
				c.Bundles = make([]cachedBundle, 0, d.Len(v))
				for e := range d.Elems(v) {
					var cb cachedBundle
					if !decodeBundle(d, e, &cb) {
						return false
					}
					c.Bundles = append(c.Bundles, cb)
				}
			}
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return have == 7
}

// decodeBundle decodes one entry of "bundles".
func decodeBundle(d *pyjson.Doc, obj pyjson.V, cb *cachedBundle) bool {
	if d.Kind(obj) != pyjson.Object {
		return false
	}
	const required = 1<<11 - 1
	var have uint
	for k, v := range d.Members(obj) {
		ok := true
		switch string(d.Bytes(k)) {
		case "dir":
			have |= 1 << 0
			cb.Dir, ok = strOf(d, v)
		case "sealed":
			have |= 1 << 1
			cb.Sealed, ok = boolOf(d, v)
		case "files":
			have |= 1 << 2
			cb.Files, ok = strOf(d, v)
		case "ident":
			have |= 1 << 3
			cb.Ident, ok = strOf(d, v)
		case "base_id":
			have |= 1 << 4
			cb.BaseID, ok = strOf(d, v)
		case "available":
			have |= 1 << 5
			cb.Available, ok = boolOf(d, v)
		case "reason":
			cb.Reason, ok = strOf(d, v)
		case "params":
			have |= 1 << 6
			switch d.Kind(v) {
			case pyjson.Null:
			case pyjson.Array:
				cb.Params = make([]string, 0, d.Len(v))
				for e := range d.Elems(v) {
					s, ok := strOf(d, e)
					if !ok {
						return false
					}
					cb.Params = append(cb.Params, s)
				}
			default:
				ok = false
			}
		case "param_types":
			have |= 1 << 10
			switch d.Kind(v) {
			case pyjson.Null:
			case pyjson.Array:
				cb.ParamTypes = make([]string, 0, d.Len(v))
				for e := range d.Elems(v) {
					s, ok := strOf(d, e)
					if !ok {
						return false
					}
					cb.ParamTypes = append(cb.ParamTypes, s)
				}
			default:
				ok = false
			}
		case "step_count":
			have |= 1 << 7
			cb.StepCount, ok = intOf(d, v)
		case "schema_version":
			have |= 1 << 8
			if d.Kind(v) != pyjson.Null {
				var n int
				n, ok = intOf(d, v)
				cb.SchemaVersion = &n
			}
		case "content_digest":
			cb.ContentDigest, ok = strOf(d, v)
		case "encrypted":
			have |= 1 << 9
			cb.Encrypted, ok = boolOf(d, v)
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return have == required
}

func strOf(d *pyjson.Doc, v pyjson.V) (string, bool) {
	return d.Str(v), d.Kind(v) == pyjson.String
}

func boolOf(d *pyjson.Doc, v pyjson.V) (bool, bool) {
	return d.True(v), d.Kind(v) == pyjson.Bool
}

func intOf(d *pyjson.Doc, v pyjson.V) (int, bool) {
	if !d.IsInt(v) {
		return 0, false
	}
	n, err := strconv.Atoi(string(d.Bytes(v)))
	return n, err == nil
}
