package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// readMetadata fills the schema facts (counts, parameters) from the raw
// workflow JSON and
// captures the protected data. Fields it reads must have the documented JSON
// types (else invalid_json); absent or null fields take Flow's defaults.
func (b *Bundle) readMetadata(d *pyjson.Doc) *Error {
	bad := func(field string) *Error {
		return newErr(KindInvalidJSON, "workflow field %s has the wrong type", field)
	}
	top := d.Root()

	b.SchemaVersion = 2
	if sv := d.Get(top, "schema_version"); d.IsInt(sv) && schemaAbove2(d.Bytes(sv)) {
		b.SchemaVersion = saturatingInt(d.Bytes(sv))
	}

	p := &Protected{}
	switch n := d.Get(top, "name"); {
	case d.IsNull(n):
	case d.Kind(n) == pyjson.String:
		p.Name = d.Str(n)
	default:
		return bad("name")
	}

	steps := d.Get(top, "steps")
	switch {
	case d.IsNull(steps):
	case d.Kind(steps) != pyjson.Array:
		return bad("steps")
	default:
		b.StepCount = d.Len(steps)
		for st := range d.Elems(steps) {
			p.StepIntents = append(p.StepIntents, d.Str(d.Get(st, "intent")))
		}
	}

	// action_step_count: Flow's canonical traversal: the linear steps
	// without a program, else the action states of the program and of
	// every subflow.
	switch prog := d.Get(top, "program"); {
	case d.IsNull(prog):
		b.ActionStepCount = b.StepCount
	case d.Kind(prog) != pyjson.Object:
		return bad("program")
	default:
		b.ActionStepCount = countActions(d, prog)
		if sf := d.Get(top, "subflows"); !d.IsNull(sf) {
			if d.Kind(sf) != pyjson.Object {
				return bad("subflows")
			}
			for _, g := range d.Members(sf) {
				b.ActionStepCount += countActions(d, g)
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

	if params := d.Get(top, "params"); !d.IsNull(params) {
		if d.Kind(params) != pyjson.Object {
			return bad("params")
		}
		for k, v := range d.Members(params) {
			if d.Kind(v) != pyjson.String {
				return bad("params")
			}
			key := d.Str(k)
			b.LegacyParams = append(b.LegacyParams, key)
			p.RecordedParams = append(p.RecordedParams, NamedValue{key, d.Str(v)})
			names[key] = true
		}
	}
	if ps := d.Get(top, "param_specs"); !d.IsNull(ps) {
		if d.Kind(ps) != pyjson.Object {
			return bad("param_specs")
		}
		for k, v := range d.Members(ps) {
			if d.Kind(v) != pyjson.Object {
				return bad("param_specs")
			}
			key := d.Str(k)
			sp := spec{typ: "string", required: true, choices: []string{}}
			switch t := d.Get(v, "type"); {
			case d.IsNull(t):
			case d.Kind(t) == pyjson.String:
				sp.typ = d.Str(t)
			default:
				return bad("param_specs.type")
			}
			switch r := d.Get(v, "required"); {
			case d.IsNull(r):
			case d.Kind(r) == pyjson.Bool:
				sp.required = d.True(r)
			default:
				return bad("param_specs.required")
			}
			switch c := d.Get(v, "choices"); {
			case d.IsNull(c):
			case d.Kind(c) == pyjson.Array:
				for ch := range d.Elems(c) {
					if d.Kind(ch) != pyjson.String {
						return bad("param_specs.choices")
					}
					sp.choices = append(sp.choices, d.Str(ch))
				}
			default:
				return bad("param_specs.choices")
			}
			switch ex := d.Get(v, "example"); {
			case d.IsNull(ex):
			case d.Kind(ex) == pyjson.String:
				p.SpecExamples = append(p.SpecExamples, NamedValue{key, d.Str(ex)})
			default:
				return bad("param_specs.example")
			}
			specs[key] = sp
			b.ParamSpecNames = append(b.ParamSpecNames, key)
			names[key] = true
		}
	}
	if sp := d.Get(top, "secret_params"); !d.IsNull(sp) {
		if d.Kind(sp) != pyjson.Array {
			return bad("secret_params")
		}
		for s := range d.Elems(sp) {
			if d.Kind(s) != pyjson.String {
				return bad("secret_params")
			}
			name := d.Str(s)
			b.SecretParams = append(b.SecretParams, name)
			secret[name] = true
			names[name] = true
		}
	}
	// Flow's canonical runtime schema: union of names sorted by code point; type and required
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
func countActions(d *pyjson.Doc, g pyjson.V) int {
	n := 0
	for _, st := range d.Members(d.Get(g, "states")) {
		if d.StrIs(d.Get(st, "kind"), "action") {
			n++
		}
	}
	return n
}

// schemaAbove2 reports whether an integer token is >= 2.
func schemaAbove2(tok []byte) bool {
	if tok[0] == '-' {
		return false
	}
	return len(tok) > 1 || tok[0] >= '2'
}

func saturatingInt(tok []byte) int {
	n := 0
	for i := 0; i < len(tok); i++ {
		if n > (1<<62)/10 {
			return 1 << 62
		}
		n = n*10 + int(tok[i]-'0')
	}
	return n
}

// contentDigest computes the content digest (docs/bundle.md, Content
// digest): SHA-256 of canonical_json({"files": FH,
// "workflow": W}) where W is the workflow without "manifest", with
// schema_version migrated, and with the schema-v2 default removals when it
// is exactly 2.
// FH is member files of fd (the stored file_hashes; None means {}). It marks
// omissions in d and writes into buf (returned for reuse).
func contentDigest(d *pyjson.Doc, fd *pyjson.Doc, files pyjson.V, buf []byte) (string, []byte) {
	top := d.Root()
	if k, _ := d.Member(top, "manifest"); k != pyjson.None {
		d.Omit(k)
	}
	schema2, inject := true, true
	if k, sv := d.Member(top, "schema_version"); k != pyjson.None {
		if d.IsInt(sv) && schemaAbove2(d.Bytes(sv)) {
			schema2 = string(d.Bytes(sv)) == "2"
			inject = false
		} else {
			d.Omit(k)
		}
	}
	if schema2 {
		omitV2(d, top)
	}
	buf = append(buf[:0], `{"files":`...)
	if files == pyjson.None {
		buf = append(buf, "{}"...)
	} else {
		buf, _ = fd.AppendCanonical(buf, files) // floats are repr: no error
	}
	buf = append(buf, `,"workflow":`...)
	if inject {
		buf, _ = d.AppendCanonicalWith(buf, top, "schema_version", []byte("2"))
	} else {
		buf, _ = d.AppendCanonical(buf, top)
	}
	buf = append(buf, '}')
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:]), buf
}

// The schema-v2 default removals (docs/bundle.md, Content digest), applied
// only at the positions where
// each owner model lives.

func omitIf(d *pyjson.Doc, obj pyjson.V, key string, match func(*pyjson.Doc, pyjson.V) bool) {
	if k, v := d.Member(obj, key); k != pyjson.None && match(d, v) {
		d.Omit(k)
	}
}

func isNullV(d *pyjson.Doc, v pyjson.V) bool    { return d.Kind(v) == pyjson.Null }
func isEmptyArr(d *pyjson.Doc, v pyjson.V) bool { return d.Kind(v) == pyjson.Array && d.Len(v) == 0 }
func isFalse(d *pyjson.Doc, v pyjson.V) bool    { return d.False(v) }
func isNullOrEmpty(d *pyjson.Doc, v pyjson.V) bool {
	return isNullV(d, v) || isEmptyArr(d, v)
}
func isID(d *pyjson.Doc, v pyjson.V) bool { return d.StrIs(v, "id") }

// objAt returns member key of v when it is an object, else None.
func objAt(d *pyjson.Doc, v pyjson.V, key string) pyjson.V {
	if c := d.Get(v, key); d.Kind(c) == pyjson.Object {
		return c
	}
	return pyjson.None
}

func omitV2(d *pyjson.Doc, w pyjson.V) {
	omitIf(d, w, "interstitials", isEmptyArr)
	for it := range d.Elems(d.Get(w, "interstitials")) {
		if a := objAt(d, it, "dismiss_anchor"); a != pyjson.None {
			omitAnchor(d, a)
		}
		for _, k := range [...]string{"detect", "clearance"} {
			if p := objAt(d, it, k); p != pyjson.None {
				omitPredicate(d, p, 0)
			}
		}
	}
	for s := range d.Elems(d.Get(w, "steps")) {
		omitStep(d, s)
	}
	if g := objAt(d, w, "program"); g != pyjson.None {
		omitGraph(d, g)
	}
	for _, g := range d.Members(objAt(d, w, "subflows")) {
		if d.Kind(g) == pyjson.Object {
			omitGraph(d, g)
		}
	}
}

func omitGraph(d *pyjson.Doc, g pyjson.V) {
	for _, st := range d.Members(objAt(d, g, "states")) {
		if d.Kind(st) != pyjson.Object {
			continue
		}
		if s := objAt(d, st, "step"); s != pyjson.None {
			omitStep(d, s)
		}
		for tr := range d.Elems(d.Get(st, "transitions")) {
			if p := objAt(d, tr, "guard"); p != pyjson.None {
				omitPredicate(d, p, 0)
			}
		}
		if dec := objAt(d, st, "decision"); dec != pyjson.None {
			for rv := range d.Elems(d.Get(dec, "revalidation")) {
				if d.Kind(rv) == pyjson.Object {
					omitPredicate(d, rv, 0)
				}
			}
		}
	}
}

func omitStep(d *pyjson.Doc, s pyjson.V) {
	if d.Kind(s) != pyjson.Object {
		return
	}
	omitIf(d, s, "field_label", isNullV)
	omitIf(d, s, "risk_explanation", isNullV)
	omitIf(d, s, "risk_review_required", isFalse)
	omitIf(d, s, "modifiers", isEmptyArr)
	omitIf(d, s, "drag_end_anchor", isNullV)
	omitIf(d, s, "selection_commit_key", isNullV)
	omitIf(d, s, "selection_region", isNullV)
	for _, k := range [...]string{"anchor", "drag_end_anchor"} {
		if a := objAt(d, s, k); a != pyjson.None {
			omitAnchor(d, a)
		}
	}
	if p := objAt(d, s, "wait_until"); p != pyjson.None {
		omitPredicate(d, p, 0)
	}
	if g := objAt(d, s, "guard"); g != pyjson.None {
		if p := objAt(d, g, "predicate"); p != pyjson.None {
			omitPredicate(d, p, 0)
		}
	}
	for e := range d.Elems(d.Get(s, "effects")) {
		omitEffect(d, e)
	}
	if ab := objAt(d, s, "api_binding"); ab != pyjson.None {
		for e := range d.Elems(d.Get(ab, "effects")) {
			omitEffect(d, e)
		}
	}
}

func omitEffect(d *pyjson.Doc, e pyjson.V) {
	if d.Kind(e) != pyjson.Object {
		return
	}
	omitIf(d, e, "new_records", isEmptyArr)
	omitIf(d, e, "identity_field", isID)
}

func omitAnchor(d *pyjson.Doc, a pyjson.V) {
	if st := objAt(d, a, "structural"); st != pyjson.None {
		omitIf(d, st, "frame_path", isNullOrEmpty)
	}
}

func omitPredicate(d *pyjson.Doc, p pyjson.V, depth int) {
	if depth > maxDepth {
		return
	}
	if a := objAt(d, p, "anchor"); a != pyjson.None {
		omitAnchor(d, a)
	}
	for op := range d.Elems(d.Get(p, "operands")) {
		if d.Kind(op) == pyjson.Object {
			omitPredicate(d, op, depth+1)
		}
	}
}

// slugify is the slug rule (docs/bundle.md, Workflow ids): Python's full
// lower-casing (U+0130 İ
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
