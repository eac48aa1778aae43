package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// readMetadata fills the schema facts of §2 from the raw workflow JSON and
// captures the protected data. Fields it reads must have the documented JSON
// types (else invalid_json); absent or null fields take Flow's defaults.
func (b *Bundle) readMetadata(top *value) *Error {
	bad := func(field string) *Error {
		return newErr(KindInvalidJSON, "workflow field %s has the wrong type", field)
	}

	b.SchemaVersion = 2
	if sv := top.get("schema_version"); sv != nil && sv.kind == jNumber && sv.isInt && schemaAbove2(sv.s) {
		b.SchemaVersion = saturatingInt(sv.s)
	}

	p := &Protected{}
	switch n := top.get("name"); {
	case n.isNull():
	case n.kind == jString:
		p.Name = n.s
	default:
		return bad("name")
	}

	steps := top.get("steps")
	switch {
	case steps.isNull():
	case steps.kind != jArray:
		return bad("steps")
	default:
		b.StepCount = len(steps.arr)
		for i := range steps.arr {
			intent := ""
			if in := steps.arr[i].get("intent"); in != nil && in.kind == jString {
				intent = in.s
			}
			p.StepIntents = append(p.StepIntents, intent)
		}
	}

	// action_step_count: Flow's canonical traversal (§2).
	switch prog := top.get("program"); {
	case prog.isNull():
		b.ActionStepCount = b.StepCount
	case prog.kind != jObject:
		return bad("program")
	default:
		b.ActionStepCount = countActions(prog)
		if sf := top.get("subflows"); !sf.isNull() {
			if sf.kind != jObject {
				return bad("subflows")
			}
			for i := range sf.obj {
				b.ActionStepCount += countActions(&sf.obj[i].val)
			}
		}
	}

	type spec struct {
		typ      string
		required bool
		choices  []string
	}
	specs := map[string]spec{}
	secret := map[string]bool{}
	names := map[string]bool{}

	if params := top.get("params"); !params.isNull() {
		if params.kind != jObject {
			return bad("params")
		}
		for _, m := range params.obj {
			if m.val.kind != jString {
				return bad("params")
			}
			b.LegacyParams = append(b.LegacyParams, m.key)
			p.RecordedParams = append(p.RecordedParams, NamedValue{m.key, m.val.s})
			names[m.key] = true
		}
	}
	if ps := top.get("param_specs"); !ps.isNull() {
		if ps.kind != jObject {
			return bad("param_specs")
		}
		for i := range ps.obj {
			m := &ps.obj[i]
			if m.val.kind != jObject {
				return bad("param_specs")
			}
			sp := spec{typ: "string", required: true, choices: []string{}}
			switch t := m.val.get("type"); {
			case t.isNull():
			case t.kind == jString:
				sp.typ = t.s
			default:
				return bad("param_specs.type")
			}
			switch r := m.val.get("required"); {
			case r.isNull():
			case r.kind == jBool:
				sp.required = r.b
			default:
				return bad("param_specs.required")
			}
			switch c := m.val.get("choices"); {
			case c.isNull():
			case c.kind == jArray:
				for _, ch := range c.arr {
					if ch.kind != jString {
						return bad("param_specs.choices")
					}
					sp.choices = append(sp.choices, ch.s)
				}
			default:
				return bad("param_specs.choices")
			}
			switch ex := m.val.get("example"); {
			case ex.isNull():
			case ex.kind == jString:
				p.SpecExamples = append(p.SpecExamples, NamedValue{m.key, ex.s})
			default:
				return bad("param_specs.example")
			}
			specs[m.key] = sp
			b.ParamSpecNames = append(b.ParamSpecNames, m.key)
			names[m.key] = true
		}
	}
	if sp := top.get("secret_params"); !sp.isNull() {
		if sp.kind != jArray {
			return bad("secret_params")
		}
		for _, s := range sp.arr {
			if s.kind != jString {
				return bad("secret_params")
			}
			b.SecretParams = append(b.SecretParams, s.s)
			secret[s.s] = true
			names[s.s] = true
		}
	}
	// View 1 of §2: union of names sorted by code point; type and required
	// from the spec, else string / secret-only required; choices from the spec.
	b.Params = make([]Param, 0, len(names))
	for n := range names {
		pr := Param{Name: n, Type: "string", Required: secret[n], Secret: secret[n], Choices: []string{}}
		if sp, ok := specs[n]; ok {
			pr.Type, pr.Required, pr.Choices = sp.typ, sp.required, sp.choices
		}
		b.Params = append(b.Params, pr)
	}
	slices.SortFunc(b.Params, func(x, y Param) int { return strings.Compare(x.Name, y.Name) })

	p.AgentSlug = slugify(p.Name, '_')
	p.SkillSlug = slugify(p.Name, '-')
	b.protected = p
	return nil
}

// countActions counts the action states of a program graph.
func countActions(g *value) int {
	states := g.get("states")
	if states == nil || states.kind != jObject {
		return 0
	}
	n := 0
	for i := range states.obj {
		if k := states.obj[i].val.get("kind"); k != nil && k.kind == jString && k.s == "action" {
			n++
		}
	}
	return n
}

// schemaAbove2 reports whether an integer token is >= 2.
func schemaAbove2(tok string) bool {
	if tok[0] == '-' {
		return false
	}
	return len(tok) > 1 || tok[0] >= '2'
}

func saturatingInt(tok string) int {
	n := 0
	for i := 0; i < len(tok); i++ {
		if n > (1<<62)/10 {
			return 1 << 62
		}
		n = n*10 + int(tok[i]-'0')
	}
	return n
}

var canonPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// contentDigest computes §5: SHA-256 of canonical_json({"files": FH,
// "workflow": W}) where W is the workflow without "manifest", with
// schema_version migrated, and with the §5.1 omissions when it is exactly 2.
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
	bp := canonPool.Get().(*[]byte)
	buf := append((*bp)[:0], `{"files":`...)
	buf = appendCanonical(buf, files)
	buf = append(buf, `,"workflow":`...)
	buf = appendCanonical(buf, &w)
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	*bp = buf
	canonPool.Put(bp)
	return hex.EncodeToString(sum[:])
}

// The schema-v2 sealed omissions of §5.1, applied only at the positions where
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

// slugify is the slug rule of §10: Python's full lower-casing (U+0130 İ
// becomes "i" + U+0307), every run of characters outside [a-z0-9] replaced by
// one sep, sep trimmed from both ends, "workflow" when empty.
func slugify(name string, sep byte) string {
	var sb strings.Builder
	pending := false
	emit := func(c byte) {
		if pending && sb.Len() > 0 {
			sb.WriteByte(sep)
		}
		pending = false
		sb.WriteByte(c)
	}
	for _, r := range name {
		if r == 'İ' {
			emit('i')
			pending = true // U+0307 is outside [a-z0-9]
			continue
		}
		l := unicode.ToLower(r)
		if (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') {
			emit(byte(l))
		} else {
			pending = true
		}
	}
	if sb.Len() == 0 {
		return "workflow"
	}
	return sb.String()
}
