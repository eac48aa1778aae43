package serve

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/testutil"
)

// TestToolListGolden pins the tools/list wire: names,
// titles, descriptions, annotations, _meta and the exact schema bytes, for
// the default and catalog modes with run tools, for protected export, and
// for the sandbox.
// Regenerate with `go test ./serve -run TestToolListGolden -update`.
func TestToolListGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		mutate func(*Options)
		typed  bool // a bundle with every Flow type, an aliased name and a card
	}{
		{"per-workflow", func(o *Options) {}, false},
		{"typed", func(o *Options) {}, true},
		{"catalog", func(o *Options) { o.ToolMode = "catalog" }, false},
		{"export-url-synthetic", func(o *Options) {
			o.AllowProtectedExport, o.AllowURLOverride, o.AllowSyntheticRecordedDefaults = true, true, true
		}, false},
		// The sandbox: serve without --bundles, --tutorial, --authoring or
		// --allow-run.
		{"sandbox", func(o *Options) { o.Bundles, o.AllowRun, o.Sandbox = "", false, true }, false},
		{"sandbox-catalog", func(o *Options) { o.Bundles, o.AllowRun, o.Sandbox, o.ToolMode = "", false, true, "catalog" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if c.typed {
				writeCard(t, e.typedBundle("typed", "golden"), goldenCard)
			} else {
				e.demo("demo", testBundle{salt: "golden"})
			}
			o := e.opts()
			o.AllowRun = true
			c.mutate(&o)
			s := start(t, o)
			// The wire log holds every reply before the client sees it.
			var list string
			for _, l := range strings.Split(s.out(), "\n") {
				if strings.HasPrefix(l, "write: ") && strings.Contains(l, `"tools":[{`) {
					list = strings.TrimPrefix(l, "write: ")
				}
			}
			if list == "" {
				t.Fatal("no tools/list reply on the wire")
			}
			var msg struct {
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(list), &msg); err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			// One tool per line keeps the compact wire bytes reviewable.
			var res struct {
				Tools []json.RawMessage `json:"tools"`
			}
			json.Unmarshal(msg.Result, &res)
			for _, tool := range res.Tools {
				b.Write(tool)
				b.WriteByte('\n')
			}
			testutil.Golden(t, "testdata/tools_list_"+c.name+".golden", b.Bytes())
		})
	}
}
