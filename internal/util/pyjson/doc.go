// Package pyjson is the project's one strict JSON core.
//
// One tokenizer ([Doc.Parse]) turns a document into a flat token array
// (no tree of pointers, so no garbage per node): strict UTF-8, no lone
// surrogate escape, no duplicate object key at any depth, bounded nesting and
// integer size, a leading byte order mark refused or skipped as the caller
// says. Each object's member order sorted by key is computed once while
// parsing: it finds duplicates (equal neighbours) and is reused by the
// canonical writer.
//
// Two builders read the tokens:
//   - the canonical writer ([Doc.AppendCanonical]): the bytes of Python's
//     json.dumps(v, sort_keys=True, separators=(",",":"), ensure_ascii=False),
//     floats as Python's repr or refused ([Options.Floats]), members marked
//     with [Doc.Omit] left out (Flow's schema-v2 omissions are applied by the
//     caller through it);
//   - the map builder ([Doc.Value]): map[string]any, []any, string,
//     json.Number, bool and nil, every string a substring of one copy of the
//     source.
//
// [AppendValue] is the same canonical writer over such a tree (what ledger
// hashes). [Unmarshal] is the one decoder into Go structs: the strict parse,
// then every object key checked against the struct's field names exactly (a
// key differing only in case is refused; with [Options.Closed] an unknown
// key too), then the assignment. Error texts carry byte offsets, never
// content.
package pyjson
