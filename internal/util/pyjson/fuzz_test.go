package pyjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/cputime"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/jsonoracle"
)

// checkFlowOracle: under bundle's rules pyjson accepts exactly what the old
// bundle parser accepted, with byte-identical canonical output.
func checkFlowOracle(t *testing.T, b []byte) {
	t.Helper()
	old, errOld := jsonoracle.CanonicalJSON(b)
	var got []byte
	d, errNew := Parse(b, flowOpts)
	if errNew == nil {
		var err error
		if got, err = d.AppendCanonical(nil, d.Root()); err != nil {
			t.Fatalf("FloatRepr canonical failed: %v", err)
		}
	}
	if (errOld == nil) != (errNew == nil) {
		t.Fatalf("accept/reject differs from the old bundle parser: old %v, new %v\n%q", errOld, errNew, trunc(b))
	}
	if errNew == nil && !bytes.Equal(old, got) {
		t.Fatalf("canonical output differs from the old bundle writer:\nold %q\nnew %q", trunc(old), trunc(got))
	}
}

// checkLedgerOracle: under ledger's rules pyjson accepts what the old ledger
// parser accepted (nesting within one level of the bound aside: the old one
// counted scalars as a level), and its tree and canonical bytes agree.
func checkLedgerOracle(t *testing.T, b []byte) {
	t.Helper()
	old, errOld := jsonoracle.LedgerParse(b)
	d, errNew := Parse(b, ledgerOpts)
	if (errOld == nil) != (errNew == nil) {
		if dp := nesting(b); dp >= 512 && dp <= 514 {
			return
		}
		t.Fatalf("accept/reject differs from the old ledger parser: old %v, new %v\n%q", errOld, errNew, trunc(b))
	}
	if errNew != nil {
		return
	}
	want, errW := jsonoracle.LedgerCanonical(old)
	got, errG := AppendValue(nil, d.Value(d.Root()), FloatRefuse)
	tok, errT := d.AppendCanonical(nil, d.Root())
	if (errW == nil) != (errG == nil) || (errW == nil) != (errT == nil) {
		t.Fatalf("canonical refusal differs: old %v, tree %v, tokens %v", errW, errG, errT)
	}
	if errW == nil && (!bytes.Equal(want, got) || !bytes.Equal(want, tok)) {
		t.Fatalf("canonical differs from the old ledger writer:\nold  %q\ntree %q\ntok  %q", trunc(want), trunc(got), trunc(tok))
	}
}

// checkEncodingJSON: what pyjson accepts encoding/json accepts with the same
// tree; what encoding/json accepts and pyjson refuses is refused for one of
// the extra rules, and that rule really applies.
func checkEncodingJSON(t *testing.T, b []byte, opt Options) {
	t.Helper()
	d, errOurs := Parse(b, opt)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var theirs any
	errTheirs := dec.Decode(&theirs)
	if errTheirs == nil {
		if _, err := dec.Token(); err != io.EOF {
			errTheirs = errors.New("trailing data")
		}
	}
	if errOurs == nil {
		if errTheirs != nil {
			t.Fatalf("accepted what encoding/json refuses (%v): %q", errTheirs, trunc(b))
		}
		ours, _ := json.Marshal(d.Value(d.Root()))
		ref, _ := json.Marshal(theirs)
		if !bytes.Equal(ours, ref) {
			t.Fatalf("tree differs from encoding/json:\nours %s\nref  %s", trunc(ours), trunc(ref))
		}
		return
	}
	if errTheirs != nil {
		return
	}
	var se *SyntaxError
	if !errors.As(errOurs, &se) {
		t.Fatalf("error %T is not a *SyntaxError", errOurs)
	}
	ok := false
	switch se.Msg {
	case "invalid UTF-8":
		ok = !utf8.Valid(b)
	case "duplicate key":
		ok = hasDuplicateKey(b)
	case "lone surrogate escape":
		ok = bytes.Contains(bytes.ToLower(b), []byte(`\ud`))
	case "nesting too deep":
		lim := opt.MaxDepth
		if lim == 0 {
			lim = DefaultMaxDepth
		}
		ok = nesting(b) > lim
	case "integer literal too long":
		ok = opt.MaxIntDigits > 0
	case "number out of range":
		ok = opt.Floats == FloatRepr
	}
	if !ok {
		t.Fatalf("refused JSON that encoding/json accepts, and no extra rule applies: %v\n%q", errOurs, trunc(b))
	}
}

// hasDuplicateKey walks b with encoding/json's tokenizer and reports whether
// some object repeats a key.
func hasDuplicateKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj    bool
		keys   map[string]bool
		expect bool // object: next string token is a key
	}
	var st []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(st) > 0 {
			top = st[len(st)-1]
		}
		switch x := tok.(type) {
		case json.Delim:
			switch x {
			case '{', '[':
				if top != nil && top.obj {
					top.expect = true
				}
				st = append(st, &frame{obj: x == '{', keys: map[string]bool{}, expect: x == '{'})
			default:
				st = st[:len(st)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.expect {
				if top.keys[x] {
					return true
				}
				top.keys[x] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.obj {
			top.expect = true
		}
	}
}

// nesting is the maximum bracket depth of b outside strings.
func nesting(b []byte) int {
	depth, most, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '[' || c == '{'):
			depth++
			most = max(most, depth)
		case !inStr && (c == ']' || c == '}'):
			depth--
		}
	}
	return most
}

func trunc(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

func addSeeds(f *testing.F) {
	for _, b := range jsonFiles(f) {
		if len(b) < 64<<10 {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `{"a":[1,2.5e-7,-0.0,"\u2028"]}`, "\xef\xbb\xbf{}", `{"a":"\ud800"}`, `[1e400]`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, "\"\xff\"", ` null `, `{"a":"\u0000"}`, `[-0,1E+2,0.5e-3]`,
		`{"b":{"y":1,"x":[{"q":1,"p":2}]},"a":true}`} {
		f.Add([]byte(s))
	}
}

// FuzzCanonical is the differential fuzz of the JSON core: against the old
// bundle and ledger writers (byte-exact) and against encoding/json
// (accept/reject agreement where the rules coincide, identical trees), plus
// idempotence of the canonical form.
func FuzzCanonical(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFlowOracle(t, b)
		checkLedgerOracle(t, b)
		checkEncodingJSON(t, b, flowOpts)
		checkEncodingJSON(t, b, ledgerOpts)
		d, err := Parse(b, flowOpts)
		if err != nil {
			return
		}
		out, _ := d.AppendCanonical(nil, d.Root())
		if !json.Valid(out) {
			t.Fatalf("canonical output is not JSON: %q", trunc(out))
		}
		d2, err := Parse(out, flowOpts)
		if err != nil {
			t.Fatalf("canonical output refused: %v", err)
		}
		again, _ := d2.AppendCanonical(nil, d2.Root())
		if !bytes.Equal(out, again) {
			t.Fatalf("not idempotent: %q -> %q", trunc(out), trunc(again))
		}
	})
}

// BenchmarkCanonicalDigest: parse + canonical + SHA-256 of the 59 KB
// workflow.json of plain/mockmed-triage-v3 with a reused Doc and buffer
// (bundle's per-worker pattern). Target: >= 300 MB/s, <= 50 allocs/op.
func BenchmarkCanonicalDigest(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "plain/mockmed-triage-v3/workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	var d Doc
	var buf []byte
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer cpuMetrics(b, len(data))()
	for b.Loop() {
		if err := d.Parse(data, flowOpts); err != nil {
			b.Fatal(err)
		}
		buf, _ = d.AppendCanonical(buf[:0], d.Root())
		_ = sha256.Sum256(buf)
	}
}

// BenchmarkCanonicalDigestOld is the same with the old bundle code.
func BenchmarkCanonicalDigestOld(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "plain/mockmed-triage-v3/workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer cpuMetrics(b, len(data))()
	for b.Loop() {
		out, err := jsonoracle.CanonicalJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = sha256.Sum256(out)
	}
}

// BenchmarkParseOnly: the tokenizer alone.
func BenchmarkParseOnly(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "plain/mockmed-triage-v3/workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	var d Doc
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	defer cpuMetrics(b, len(data))()
	for b.Loop() {
		if err := d.Parse(data, flowOpts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValue: ledger's map builder against the old ledger parser.
func BenchmarkValue(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(vectorsDir, "plain/mockmed-triage-v3/workflow.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("pyjson", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		var d Doc
		for b.Loop() {
			if err := d.Parse(data, ledgerOpts); err != nil {
				b.Fatal(err)
			}
			_ = d.Value(d.Root())
		}
	})
	b.Run("old", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonoracle.LedgerParse(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuMetrics reports process CPU time per op (all threads, GC included) and
// the throughput it implies: on a shared machine wall time per op mostly
// measures the other tenants. Use as defer cpuMetrics(b, n)().
func cpuMetrics(b *testing.B, bytesPerOp int) func() {
	start := cpuTime()
	return func() {
		if b.N == 0 {
			return
		}
		ns := float64((cpuTime() - start).Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns, "cpu-ns/op")
		if bytesPerOp > 0 && ns > 0 {
			b.ReportMetric(float64(bytesPerOp)/ns*1e3, "cpu-MB/s")
		}
	}
}

func cpuTime() time.Duration { return cputime.Now() }
