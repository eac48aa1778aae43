package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/workflowid"
)

// workflow is one discovered bundle as the server sees it. Fields marked
// protected reach the wire only with protected export.
type workflow struct {
	id        string // opaque id, with a dedupe suffix when needed
	baseID    string // id without the suffix; idempotency bindings use it
	dir       string // absolute bundle directory (protected)
	available bool
	reason    bundle.Unavailable // why unavailable ("" when available); bundle's one enum

	params        []param // declared parameters, declared order
	stepCount     int
	schemaVersion *int
	encrypted     bool
	contentDigest string // manifest content_digest (64 hex) when loadable

	// The workflow card (cards.go): nil without a valid one; cardName is
	// its name unless another workflow's card has the same one; cardErr
	// why a card is ignored.
	card     *cards.Card
	cardName string
	cardErr  error

	// protected
	slug     string
	name     *string
	recorded map[string]string
	intents  []string
	loadErr  *string
}

// setLoadErr keeps the loader's error text for protected export, or the
// reason code when there is none.
func (w *workflow) setLoadErr(err error) {
	e := string(w.reason)
	if err != nil {
		e = err.Error()
	}
	w.loadErr = &e
}

// param is one declared parameter (docs/bundle.md, Parameter aliases).
type param struct {
	flow string       // Flow's name: the parameters file's key (protected when aliased)
	wire string       // the name schemas show and callers send: flow, or its alias
	typ  string       // Flow's declared type, one of bundle.ParamTypes or "other"
	in   *cards.Input // the card's entry for this input, nil without one
}

// paramsOf are the params of Flow's declared parameter names with their
// types (types[i] is names[i]'s).
func paramsOf(names, types []string) []param {
	ps := make([]param, len(names))
	for i, n := range names {
		ps[i] = param{flow: n, wire: bundle.WireName(n), typ: bundle.SafeType(types[i])}
	}
	return ps
}

// paramTypes are Flow's types of the declared parameters, declared order.
func (w *workflow) paramTypes() []string {
	if w.params == nil {
		return nil
	}
	s := make([]string, len(w.params))
	for i, p := range w.params {
		s[i] = p.typ
	}
	return s
}

// flowNames are Flow's names of the declared parameters, declared order.
func (w *workflow) flowNames() []string {
	if w.params == nil {
		return nil
	}
	s := make([]string, len(w.params))
	for i, p := range w.params {
		s[i] = p.flow
	}
	return s
}

// sortedParams returns the declared parameters sorted by wire name.
func (w *workflow) sortedParams() []param {
	s := slices.Clone(w.params)
	slices.SortFunc(s, func(a, b param) int { return strings.Compare(a.wire, b.wire) })
	return s
}

var (
	idemKeyRE = lazyre.New(`^[A-Za-z0-9._:-]{16,200}$`)
)

// catalog is the static set of workflows of one server.
type catalog struct {
	workflows []*workflow // discovery order
	byID      map[string]*workflow
	byName    map[string]*workflow // by card name

	digestOnce sync.Once
	digest     string // listingDigest
}

func newCatalog(ws []*workflow) *catalog {
	c := &catalog{workflows: ws, byID: make(map[string]*workflow, len(ws)), byName: map[string]*workflow{}}
	for _, w := range ws {
		c.byID[w.id] = w
		if w.cardName != "" {
			c.byName[w.cardName] = w
		}
	}
	return c
}

// lookup resolves a workflow id or a card name (no card name has the shape
// of an id). Unknown, foreign and malformed ids are all "not found": one
// answer, so an id reveals nothing.
func (c *catalog) lookup(id string) *workflow {
	if !workflowid.Valid(id) {
		return c.byName[id]
	}
	return c.byID[id]
}

// search is search_workflows' matching: every term must match the id, a
// parameter name (or, with protected export, the name) or the operator's
// --labels text.
func (c *catalog) search(terms []string, availableOnly, export bool, l *labels.Labels) []*workflow {
	var out []*workflow
	for _, w := range c.workflows {
		if availableOnly && !w.available {
			continue
		}
		if matchesAll(w, terms, export, l.Get(w.id)) {
			out = append(out, w)
		}
	}
	return out
}

func matchesAll(w *workflow, terms []string, export bool, l labels.Entry) bool {
	for _, t := range terms {
		hit := strings.Contains(w.id, t) || l.Match(t) || cardMatch(w, t)
		for _, p := range w.params {
			if hit {
				break
			}
			hit = strings.Contains(strings.ToLower(p.wire), t)
		}
		if !hit && export && w.name != nil {
			hit = strings.Contains(strings.ToLower(*w.name), t)
		}
		if !hit {
			return false
		}
	}
	return true
}

// cardMatch reports whether the lowercased term t is a substring of w's
// card text: its name, purpose, done_means or an input's description.
func cardMatch(w *workflow, t string) bool {
	if w.card == nil {
		return false
	}
	in := func(s string) bool { return s != "" && strings.Contains(strings.ToLower(s), t) }
	if in(w.cardName) || in(w.card.Purpose) || in(w.card.DoneMeans) {
		return true
	}
	for _, p := range w.params {
		if p.in != nil && in(p.in.Description) {
			return true
		}
	}
	return false
}

// normalizeQuery lowercases and splits a query into at most 8 terms.
func normalizeQuery(q string) []string {
	f := strings.Fields(strings.ToLower(q))
	if len(f) > 8 {
		f = f[:8]
	}
	return f
}

// Paging (docs/mcp.md "Paging"): list_workflows and search_workflows take
// an offset cursor bound to the query and to the listing; the attention
// queue a keyset cursor (paging.go).

// Page sizes of every paged tool.
const (
	defaultPageLimit = 50
	maxPageLimit     = 500
)

type cursorPayload struct {
	Offset  int    `json:"offset"`
	Binding string `json:"query_binding"`
}

// listingDigest is a digest of the workflow set in discovery order (ids and
// availability, both already on the wire), computed once: a cursor carries
// it inside its binding, so one from a server with another set of
// workflows, or from before the set changed, is refused.
func (c *catalog) listingDigest() string {
	c.digestOnce.Do(func() {
		h := sha256.New()
		for _, w := range c.workflows {
			h.Write([]byte(w.id))
			if w.available {
				h.Write([]byte{1})
			} else {
				h.Write([]byte{0})
			}
		}
		c.digest = hex.EncodeToString(h.Sum(nil))
	})
	return c.digest
}

// queryBinding binds a cursor to its tool, its query (the normalized terms
// and available_only) and the listing: the first 16 hex digits of a
// SHA-256 over them.
func queryBinding(tool string, terms []string, availableOnly bool, listing string) string {
	if terms == nil {
		terms = []string{}
	}
	h := sha256.New()
	b, _ := json.Marshal(struct {
		Tool    string   `json:"tool"`
		T       []string `json:"t"`
		A       bool     `json:"a"`
		Listing string   `json:"listing"`
	}{tool, terms, availableOnly, listing})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func encodeCursor(offset int, binding string) string {
	b, _ := json.Marshal(cursorPayload{offset, binding})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor returns the offset of a cursor bound to binding, or ok false
// for anything else: not base64url JSON of exactly the cursor's fields,
// another binding, or an offset this listing never hands out (the next
// page of a listing of total items starts inside it).
func decodeCursor(s, binding string, total int) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	var p cursorPayload
	if err := strictUnmarshal(b, &p); err != nil || p.Binding != binding || p.Offset <= 0 || p.Offset >= total {
		return 0, false
	}
	return p.Offset, true
}

// strictUnmarshal decodes exactly one JSON value with only v's fields.
func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data")
	}
	return nil
}
