package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/internal/cards"
	"github.com/OpenAdaptAI/openadapt-agent/internal/labels"
)

// Workflow cards (docs/mcp.md "Workflow cards"): the operator's
// openadapt-card.json in a bundle folder gives an available workflow a
// callable name, a purpose, what done means, and per input a description and
// constraints. A card is read at every start (it is not covered by the
// bundle's digest, and the digest cache only says whether the folder
// holds one); an invalid card is ignored with a local warning that names
// the workflow id and the rule, never the card's text.

// cardParams are the declared parameters a card of w may describe.
func cardParams(w *workflow) []cards.Param {
	ps := make([]cards.Param, len(w.params))
	for i, p := range w.params {
		ps[i] = cards.Param{Name: p.flow, Type: p.typ}
	}
	return ps
}

// readCard reads w's card; choices gives Flow's choices of an enum
// parameter (b's when the bundle was just loaded, else a metadata load).
func (s *bundleLoader) readCard(w *workflow, b *bundle.Bundle) {
	choices := func(name string) ([]string, error) {
		if b == nil {
			var err error
			b, err = bundle.Load(w.dir, s.bundleOpts(bundle.Metadata, bundle.WithWorkers(1))...)
			if err != nil || b == nil || b.ContentDigest != w.contentDigest {
				b = nil
				return nil, errors.New("the bundle changed")
			}
		}
		p, ok := b.Param(name)
		if !ok {
			return nil, errors.New("no such parameter")
		}
		return p.Choices, nil
	}
	c, err := cards.Read(context.Background(), w.dir, cards.Options{Params: cardParams(w), Choices: choices})
	w.cardErr = err
	if c == nil || err != nil {
		return
	}
	w.card, w.cardName = c, c.Name
	for i := range w.params {
		w.params[i].in = c.Inputs[w.params[i].flow]
	}
}

// listsCard reports whether a digest-cache entry's walked files hold a card
// at the top of the bundle folder.
func listsCard(files string) bool {
	for f := range strings.SplitSeq(files, "\n") {
		if f == cards.FileName {
			return true
		}
	}
	return false
}

// settleCards warns about every ignored card, then drops a card name that
// two or more workflows use from each of them, with one warning naming
// their ids (never the name). ws are in discovery order, ids assigned.
func (s *bundleLoader) settleCards(ws []*workflow) {
	users := map[string][]*workflow{}
	var names []string
	for _, w := range ws {
		if w.cardErr != nil {
			fmt.Fprintf(s.stderr, "serve: warning: workflow %s: its %s is ignored: %s\n", w.id, cards.FileName, cardRule(w.cardErr))
			continue
		}
		if w.cardName == "" {
			continue
		}
		if users[w.cardName] == nil {
			names = append(names, w.cardName)
		}
		users[w.cardName] = append(users[w.cardName], w)
	}
	for _, n := range names {
		ws := users[n]
		if len(ws) < 2 {
			continue
		}
		ids := make([]string, len(ws))
		for i, w := range ws {
			w.cardName = ""
			ids[i] = w.id
		}
		fmt.Fprintf(s.stderr, "serve: warning: workflows %s have cards with the same name; the name is dropped from each (their ids still work)\n", strings.Join(ids, ", "))
	}
}

// cardRule is the rule an ignored card broke, as the warning shows it.
func cardRule(err error) string {
	var ce *cards.Error
	if errors.As(err, &ce) {
		return ce.Error()
	}
	return "it cannot be read"
}

// display is w's label and description as listings show them: the
// operator's --labels entry wins field by field over the card's name and
// purpose.
func display(w *workflow, l labels.Entry) (label, description string) {
	label, description = l.Label, l.Description
	if label == "" {
		label = w.cardName
	}
	if description == "" && w.card != nil {
		description = w.card.Purpose
	}
	return label, description
}
