package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/bundle"
	"github.com/OpenAdaptAI/openadapt-agent/serve"
)

// bundleVectors returns the bundle vectors of testdata/flow/MANIFEST.json
// (bundle-relative paths), without the sealed ones that need scrypt with
// the key (they are listed keyless: missing_key, rule-3 ids).
func bundleVectors(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "flow", "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Vectors []struct {
			Path *string `json:"path"`
			Kind string  `json:"kind"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range m.Vectors {
		if v.Kind == "bundle" && v.Path != nil {
			out = append(out, *v.Path)
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d bundle vectors", len(out))
	}
	return out
}

// verifyIDs runs `bundle verify --json` on each root (one operand each) and
// returns the printed workflow ids and integrity, in order.
func verifyIDs(t *testing.T, roots ...string) (ids, integrity []string) {
	t.Helper()
	t.Setenv("OPENADAPT_BUNDLE_KEY", "")
	var out, errb bytes.Buffer
	Run(context.Background(), append([]string{"bundle", "verify", "--json"}, roots...), nil, &out, &errb)
	var d struct {
		Bundles []struct {
			WorkflowID *string `json:"workflow_id"`
			Integrity  string  `json:"integrity"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatalf("bundle verify --json: %v\n%s", err, out.String())
	}
	for _, b := range d.Bundles {
		if b.WorkflowID == nil {
			t.Fatalf("bundle verify printed a null id: %s", out.String())
		}
		ids, integrity = append(ids, *b.WorkflowID), append(integrity, b.Integrity)
	}
	return ids, integrity
}

// serveList starts an in-process read-only server over roots and returns
// list_workflows' workflows.
func serveList(t *testing.T, opts serve.Options) []map[string]any {
	t.Helper()
	opts.Timeout, opts.RunWait, opts.Version = 60, 20, "test"
	opts.Environ = []string{"HOME=" + t.TempDir()}
	srv, err := serve.New(opts, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_workflows", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_workflows: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Workflows []map[string]any `json:"workflows"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Workflows
}

// TestServeIDsMatchBundleVerify: over a root holding every
// bundle vector, twice over (so the second copies carry "_2" suffixes),
// serve lists exactly the ids `bundle verify --json` prints for that root,
// in its order, and a workflow is available only where verify says
// "verified".
func TestServeIDsMatchBundleVerify(t *testing.T) {
	root := filepath.Join(t.TempDir(), "bundles")
	for copyN := range 2 {
		for i, v := range bundleVectors(t) {
			dst := filepath.Join(root, fmt.Sprintf("%d-%02d-%s", copyN, i, strings.ReplaceAll(v, "/", "-")))
			if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "flow", v))); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantIDs, integrity := verifyIDs(t, root)
	suffixed := 0
	for _, id := range wantIDs {
		if strings.HasSuffix(id, "_2") {
			suffixed++
		}
	}
	if suffixed < 10 {
		t.Fatalf("only %d _2 ids: %v", suffixed, wantIDs)
	}
	for _, cache := range []string{"off", filepath.Join(t.TempDir(), "cache"), ""} {
		name := cache
		if cache == "" {
			// The warm start reads the cache the previous pass wrote.
			cache, name = filepath.Join(filepath.Dir(root), "warm"), "warm"
			serveList(t, serve.Options{Bundles: root, CacheDir: cache})
		}
		ws := serveList(t, serve.Options{Bundles: root, CacheDir: cache})
		if len(ws) != len(wantIDs) {
			t.Fatalf("%s: serve lists %d workflows, bundle verify %d", name, len(ws), len(wantIDs))
		}
		avail := 0
		for i, w := range ws {
			if w["available"] == true {
				avail++
			}
			if w["id"] != wantIDs[i] {
				t.Errorf("%s: workflow %d: serve %v, bundle verify %s", name, i, w["id"], wantIDs[i])
			}
			if w["available"] == true && integrity[i] != "verified" {
				t.Errorf("%s: workflow %s available but bundle verify says %s", name, wantIDs[i], integrity[i])
			}
		}
		if avail < 8 {
			t.Errorf("%s: only %d workflows available", name, avail)
		}
	}
}

// TestServeIDsAcrossRoots (docs/bundle.md, Workflow ids): with repeated --bundles the
// ids are bundle verify's base ids, suffixed across the whole server in
// root order (bundle verify suffixes within each operand only).
func TestServeIDsAcrossRoots(t *testing.T) {
	base := t.TempDir()
	var roots []string
	for r := range 2 {
		root := filepath.Join(base, fmt.Sprintf("root%d", r))
		roots = append(roots, root)
		for i, v := range bundleVectors(t)[:6] {
			for c := range r + 1 {
				dst := filepath.Join(root, fmt.Sprintf("%02d-%d-%s", i, c, strings.ReplaceAll(v, "/", "-")))
				if err := os.CopyFS(dst, os.DirFS(filepath.Join("..", "testdata", "flow", v))); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var bases []string
	for _, r := range roots {
		ids, _ := verifyIDs(t, r)
		for _, id := range ids {
			if i := strings.LastIndexByte(id, '_'); i > len("workflow") {
				id = id[:i]
			}
			bases = append(bases, id)
		}
	}
	want := bundle.SuffixIDs(bases)
	ws := serveList(t, serve.Options{BundleRoots: roots, CacheDir: "off"})
	if len(ws) != len(want) {
		t.Fatalf("serve lists %d, want %d", len(ws), len(want))
	}
	third := 0
	for i, w := range ws {
		if w["id"] != want[i] {
			t.Errorf("workflow %d: serve %v, want %s", i, w["id"], want[i])
		}
		if strings.HasSuffix(want[i], "_3") {
			third++
		}
	}
	if third == 0 {
		t.Fatalf("no _3 ids across roots: %v", want)
	}
	// The flag: a repeated --bundles root is refused (exit 2), naming it.
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"serve", "--bundles", roots[0], "--bundles", roots[0]}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "are the same folder") || out.Len() != 0 {
		t.Errorf("repeated root: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
