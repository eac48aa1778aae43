package serve

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
)

// The Needs Attention queue pages with a keyset cursor (docs/mcp.md
// "Paging"): the queue changes while the server runs (runs halt, items are
// resolved), so a cursor names the last item a page returned, by its
// place in a total order, and the next page starts right after that place
// whether or not the item is still there. No item is returned twice and
// none that stayed in the queue is skipped.

// attentionKey is an item's place in the queue's order: newest created_at
// first, a null created_at last, then by id.
type attentionKey struct {
	CreatedAt *string `json:"created_at"`
	ID        string  `json:"id"`
}

// compareAttention orders a before b (negative) in the queue's order.
func compareAttention(a, b attentionKey) int {
	switch {
	case a.CreatedAt == nil && b.CreatedAt == nil:
	case a.CreatedAt == nil:
		return 1
	case b.CreatedAt == nil:
		return -1
	default:
		if c := strings.Compare(*b.CreatedAt, *a.CreatedAt); c != 0 {
			return c
		}
	}
	return strings.Compare(a.ID, b.ID)
}

func keyOf(it *attention.Item) attentionKey { return attentionKey{it.CreatedAt, it.ID} }

// attentionCursorPayload is the keyset cursor: the last returned item's key
// (both fields are on the wire in that item already) and the binding.
type attentionCursorPayload struct {
	After   attentionKey `json:"after"`
	Binding string       `json:"query_binding"`
}

// attentionBinding binds a queue cursor to this server process: the queue
// is another one on another server (another runs folder), so a cursor from
// any other server, or from before a restart, is refused.
func attentionBinding(instance string) string {
	sum := sha256.Sum256([]byte(toolListAttention + "\x00" + instance))
	return hex.EncodeToString(sum[:])[:16]
}

func encodeAttentionCursor(after attentionKey, binding string) string {
	b, _ := json.Marshal(attentionCursorPayload{after, binding})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeAttentionCursor returns the key of a cursor bound to binding, or
// ok false.
func decodeAttentionCursor(s, binding string) (attentionKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return attentionKey{}, false
	}
	var p attentionCursorPayload
	if err := strictUnmarshal(b, &p); err != nil || p.Binding != binding || !attention.ValidID(p.After.ID) {
		return attentionKey{}, false
	}
	return p.After, true
}

// attentionPage sorts items into the queue's order and returns the page
// after the cursor key (from the start when after is nil) of at most limit
// items, with the next cursor when more follow.
func attentionPage(items []attention.Item, after *attentionKey, limit int, binding string) ([]attention.Item, *string) {
	slices.SortStableFunc(items, func(a, b attention.Item) int { return compareAttention(keyOf(&a), keyOf(&b)) })
	start := 0
	if after != nil {
		start, _ = slices.BinarySearchFunc(items, *after, func(it attention.Item, k attentionKey) int {
			return compareAttention(keyOf(&it), k)
		})
		// The cursor's own item, when still queued, was on the last page.
		if start < len(items) && compareAttention(keyOf(&items[start]), *after) == 0 {
			start++
		}
	}
	end := min(start+limit, len(items))
	page := items[start:end]
	if end < len(items) && end > start {
		next := encodeAttentionCursor(keyOf(&items[end-1]), binding)
		return page, &next
	}
	return page, nil
}
