package jsonoracle

import (
	"crypto/sha256"
	"encoding/hex"
)

// Frozen copy of bundle/metadata.go's content digest (docs/bundle.md, Content
// digest, with the schema-v2 default removals) before internal/util/pyjson:
// a test oracle.

var emptyObject = value{kind: jObject, obj: []member{}}

// ContentDigest parses a workflow.json and returns its content digest over
// the embedded manifest's file_hashes ({} when there is none), the old way.
func ContentDigest(data []byte) (string, error) {
	top, err := parseObject(data)
	if err != nil {
		return "", err
	}
	files := &emptyObject
	if m := top.get("manifest"); m != nil && m.kind == jObject {
		if fh := m.get("file_hashes"); fh != nil && fh.kind == jObject {
			files = fh
		}
	}
	return contentDigest(&top, files), nil
}

func schemaAbove2(tok string) bool {
	if tok[0] == '-' {
		return false
	}
	return len(tok) > 1 || tok[0] >= '2'
}

// contentDigest computes the content digest: SHA-256 of canonical_json({"files": FH,
// "workflow": W}) where W is the workflow without "manifest", with
// schema_version migrated, and with the schema-v2 default removals when it
// is exactly 2.
func contentDigest(top *value, files *value) string {
	w := value{kind: jObject, obj: make([]member, 0, len(top.obj)+1)}
	schema2 := true
	svSet := false
	for _, m := range top.obj {
		switch m.key {
		case "manifest":
			continue
		case "schema_version":
			if m.val.kind == jNumber && m.val.isInt && schemaAbove2(m.val.s) {
				schema2 = m.val.s == "2"
				w.obj = append(w.obj, member{key: m.key, val: m.val})
			} else {
				w.obj = append(w.obj, member{key: m.key, val: value{kind: jNumber, isInt: true, s: "2"}})
			}
			svSet = true
			continue
		}
		m.omit = false
		w.obj = append(w.obj, m)
	}
	if !svSet {
		w.obj = append(w.obj, member{key: "schema_version", val: value{kind: jNumber, isInt: true, s: "2"}})
	}
	if schema2 {
		omitV2(&w)
	}
	buf := append([]byte(nil), `{"files":`...)
	buf = appendCanonical(buf, files)
	buf = append(buf, `,"workflow":`...)
	buf = appendCanonical(buf, &w)
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// The schema-v2 default removals, applied only at the positions where
// each owner model lives.

func omitIf(obj *value, key string, match func(*value) bool) {
	for i := range obj.obj {
		if obj.obj[i].key == key && match(&obj.obj[i].val) {
			obj.obj[i].omit = true
		}
	}
}

func isNullV(v *value) bool       { return v.kind == jNull }
func isEmptyArr(v *value) bool    { return v.kind == jArray && len(v.arr) == 0 }
func isFalse(v *value) bool       { return v.kind == jBool && !v.b }
func isNullOrEmpty(v *value) bool { return isNullV(v) || isEmptyArr(v) }

func objAt(v *value, key string) *value {
	if c := v.get(key); c != nil && c.kind == jObject {
		return c
	}
	return nil
}

func arrAt(v *value, key string) []value {
	if c := v.get(key); c != nil && c.kind == jArray {
		return c.arr
	}
	return nil
}

func omitV2(w *value) {
	omitIf(w, "interstitials", isEmptyArr)
	for i := range arrAt(w, "interstitials") {
		it := &arrAt(w, "interstitials")[i]
		if it.kind != jObject {
			continue
		}
		if a := objAt(it, "dismiss_anchor"); a != nil {
			omitAnchor(a)
		}
		for _, k := range []string{"detect", "clearance"} {
			if p := objAt(it, k); p != nil {
				omitPredicate(p, 0)
			}
		}
	}
	steps := arrAt(w, "steps")
	for i := range steps {
		omitStep(&steps[i])
	}
	if g := objAt(w, "program"); g != nil {
		omitGraph(g)
	}
	if sf := objAt(w, "subflows"); sf != nil {
		for i := range sf.obj {
			if sf.obj[i].val.kind == jObject {
				omitGraph(&sf.obj[i].val)
			}
		}
	}
}

func omitGraph(g *value) {
	states := objAt(g, "states")
	if states == nil {
		return
	}
	for i := range states.obj {
		st := &states.obj[i].val
		if st.kind != jObject {
			continue
		}
		if s := objAt(st, "step"); s != nil {
			omitStep(s)
		}
		tr := arrAt(st, "transitions")
		for j := range tr {
			if tr[j].kind == jObject {
				if p := objAt(&tr[j], "guard"); p != nil {
					omitPredicate(p, 0)
				}
			}
		}
		if d := objAt(st, "decision"); d != nil {
			rv := arrAt(d, "revalidation")
			for j := range rv {
				if rv[j].kind == jObject {
					omitPredicate(&rv[j], 0)
				}
			}
		}
	}
}

func omitStep(s *value) {
	if s.kind != jObject {
		return
	}
	omitIf(s, "field_label", isNullV)
	omitIf(s, "risk_explanation", isNullV)
	omitIf(s, "risk_review_required", isFalse)
	omitIf(s, "modifiers", isEmptyArr)
	omitIf(s, "drag_end_anchor", isNullV)
	omitIf(s, "selection_commit_key", isNullV)
	omitIf(s, "selection_region", isNullV)
	for _, k := range []string{"anchor", "drag_end_anchor"} {
		if a := objAt(s, k); a != nil {
			omitAnchor(a)
		}
	}
	if p := objAt(s, "wait_until"); p != nil {
		omitPredicate(p, 0)
	}
	if g := objAt(s, "guard"); g != nil {
		if p := objAt(g, "predicate"); p != nil {
			omitPredicate(p, 0)
		}
	}
	effects := arrAt(s, "effects")
	for i := range effects {
		omitEffect(&effects[i])
	}
	if ab := objAt(s, "api_binding"); ab != nil {
		effects := arrAt(ab, "effects")
		for i := range effects {
			omitEffect(&effects[i])
		}
	}
}

func omitEffect(e *value) {
	if e.kind != jObject {
		return
	}
	omitIf(e, "new_records", isEmptyArr)
	omitIf(e, "identity_field", func(v *value) bool { return v.kind == jString && v.s == "id" })
}

func omitAnchor(a *value) {
	if st := objAt(a, "structural"); st != nil {
		omitIf(st, "frame_path", isNullOrEmpty)
	}
}

func omitPredicate(p *value, depth int) {
	if depth > maxDepth {
		return
	}
	if a := objAt(p, "anchor"); a != nil {
		omitAnchor(a)
	}
	ops := arrAt(p, "operands")
	for i := range ops {
		if ops[i].kind == jObject {
			omitPredicate(&ops[i], depth+1)
		}
	}
}
