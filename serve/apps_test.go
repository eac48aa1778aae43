//go:build unix

package serve

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/serve/internal/stdio"
)

// appsCaps are the capabilities of a client that renders MCP Apps.
func appsCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Extensions: map[string]any{appsExtension: map[string]any{"mimeTypes": []string{appsMIME}}}}
}

// clientSession connects a client with caps (nil: the SDK's defaults) and
// an elicitation handler answer (nil: none) to a new server for o.
func clientSession(t *testing.T, o Options, caps *mcp.ClientCapabilities, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error)) *session {
	t.Helper()
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return attachClient(t, srv, stderr, caps, answer, true)
}

// attachClient connects one more client to srv; closeServer: the cleanup
// closes srv too.
func attachClient(t *testing.T, srv *Server, stderr *syncBuffer, caps *mcp.ClientCapabilities, answer func(*mcp.ElicitRequest) (*mcp.ElicitResult, error), closeServer bool) *session {
	t.Helper()
	wire := &syncBuffer{}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.MCPServer().Connect(ctx, &mcp.LoggingTransport{Transport: st, Writer: wire}, nil)
	if err != nil {
		t.Fatal(err)
	}
	copts := &mcp.ClientOptions{Capabilities: caps}
	if answer != nil {
		copts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(r) }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, srv: srv, cs: cs, wire: wire, stderr: stderr, tools: map[string]*mcp.Tool{}, prog: &progressLog{mu: make(chan struct{}, 1)}}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		if closeServer {
			srv.Close()
		}
	})
	s.loadTools()
	return s
}

// TestAppsCards: both cards are listed and read as self-contained pages
// whose Content-Security-Policy admits exactly their own inline script and
// style and no network, and whose scripts never write markup.
func TestAppsCards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "apps"})
	s := start(t, e.opts())
	ctx := context.Background()
	list, err := s.cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
		if r.MIMEType != appsMIME {
			t.Errorf("%s: mime %q", r.URI, r.MIMEType)
		}
	}
	if strings.Join(uris, " ") != cardAttention+" "+cardRun { // sorted by URI
		t.Fatalf("resources %v", uris)
	}
	cspRe := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]+)">`)
	for _, uri := range uris {
		res, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 {
			t.Fatalf("read %s: %v", uri, err)
		}
		c := res.Contents[0]
		html := c.Text
		if c.URI != uri || c.MIMEType != appsMIME || !strings.HasPrefix(html, "<!DOCTYPE html>") {
			t.Fatalf("%s: %s %s %.40q", uri, c.URI, c.MIMEType, html)
		}
		m := cspRe.FindStringSubmatch(html)
		if m == nil {
			t.Fatalf("%s: no CSP", uri)
		}
		csp := m[1]
		for _, want := range []string{"default-src 'none'", "connect-src 'none'", "img-src 'none'", "font-src 'none'", "frame-src 'none'", "base-uri 'none'", "form-action 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP lacks %s: %s", uri, want, csp)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP allows unsafe sources: %s", uri, csp)
		}
		// Exactly one script and one style element, each admitted by hash.
		for tag, dir := range map[string]string{"script": "script-src", "style": "style-src"} {
			parts := strings.Split(html, "<"+tag+">")
			if len(parts) != 2 {
				t.Fatalf("%s: %d %s elements", uri, len(parts)-1, tag)
			}
			body, _, ok := strings.Cut(parts[1], "</"+tag+">")
			if !ok {
				t.Fatalf("%s: unterminated %s", uri, tag)
			}
			h := sha256.Sum256([]byte(body))
			if !strings.Contains(csp, dir+" 'sha256-"+base64.StdEncoding.EncodeToString(h[:])+"';") {
				t.Errorf("%s: the %s element's hash is not what the CSP admits", uri, tag)
			}
		}
		for _, banned := range []string{"http:", "https:", "src=", "href=", "@import", "url(", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "fetch(", "XMLHttpRequest", "WebSocket", "localStorage"} {
			if strings.Contains(html, banned) {
				t.Errorf("%s: the page holds %q", uri, banned)
			}
		}
		for _, want := range []string{"prefers-color-scheme: dark", "ui/initialize", "ui/notifications/initialized", "ui/notifications/tool-result", "tools/call", "max-width: 360px"} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: the page lacks %q", uri, want)
			}
		}
		if strings.Contains(html, "ui/notifications/tool-input\"") {
			t.Errorf("%s: the card must ignore tool input", uri)
		}
		ui, _ := c.Meta["ui"].(map[string]any)
		if ui == nil || ui["csp"] != nil {
			t.Errorf("%s: _meta %v (no csp: the host's restrictive default applies)", uri, c.Meta)
		}
	}
	if _, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://openadapt-agent/other"}); err == nil {
		t.Fatal("an unknown card was read")
	}
}

// TestAppsToolsList: an Apps client sees each card link and the app-only
// attended tools; any other client (none, another extension, another MIME
// type) sees neither, and cannot call an app-only tool.
func TestAppsToolsList(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	o := a.opts()
	o.AllowRun = true
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	apps := attachClient(t, srv, stderr, appsCaps(), accept, false)
	wantUI := map[string]string{
		toolGetRunReport: cardRun, "run_" + firstRunID(apps): cardRun,
		toolListAttention: cardAttention, toolGetAttention: cardAttention,
		"app_reject_attention": cardAttention, "app_teach_attention": cardAttention, "app_escalate_attention": cardAttention,
	}
	res, err := apps.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, tool := range res.Tools {
		ui, _ := tool.Meta["ui"].(map[string]any)
		want, linked := wantUI[tool.Name]
		if !linked {
			if ui != nil {
				t.Errorf("%s: unexpected ui %v", tool.Name, ui)
			}
			continue
		}
		seen++
		if ui == nil || ui["resourceUri"] != want {
			t.Errorf("%s: ui %v, want %s", tool.Name, ui, want)
		}
		vis, _ := json.Marshal(ui["visibility"])
		if app := strings.HasPrefix(tool.Name, appToolPrefix); app != (string(vis) == `["app"]`) {
			t.Errorf("%s: visibility %s", tool.Name, vis)
		}
		if strings.HasPrefix(tool.Name, "run_") && tool.Meta["requires_seal"] != true {
			t.Errorf("%s: requires_seal lost: %v", tool.Name, tool.Meta)
		}
	}
	if seen != len(wantUI) {
		t.Fatalf("%d linked tools, want %d", seen, len(wantUI))
	}
	others := map[string]*mcp.ClientCapabilities{
		"defaults":      nil,
		"no extensions": {},
		"other mime":    {Extensions: map[string]any{appsExtension: map[string]any{"mimeTypes": []string{"text/html"}}}},
		"bad settings":  {Extensions: map[string]any{appsExtension: true}},
	}
	var plain []byte
	for name, caps := range others {
		s := attachClient(t, srv, stderr, caps, accept, false)
		res, err := s.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.Tools)
		if plain == nil {
			plain = b
		} else if string(b) != string(plain) {
			t.Errorf("%s: a different list", name)
		}
		if strings.Contains(string(b), `"ui":`) || strings.Contains(string(b), `"name":"`+appToolPrefix) {
			t.Errorf("%s: Apps tools or links listed", name)
		}
		_, err = s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "app_escalate_attention", Arguments: a.args("apps-key-0000000001", "request_assistance", true)})
		if err == nil || !strings.Contains(err.Error(), stdio.MsgUnknownTool) {
			t.Errorf("%s: app-only call: %v", name, err)
		}
	}
	if len(a.acts()) != 0 {
		t.Fatal("a refused app-only call reached the helper")
	}
}

func firstRunID(s *session) string {
	for name := range s.tools {
		if id, ok := strings.CutPrefix(name, "run_"); ok && id != "workflow" {
			return id
		}
	}
	s.t.Fatal("no run tool")
	return ""
}

// TestAppsToolsListStdio: on Serve's own connection (pre-encoded pages) an
// Apps client gets the page with links and app-only tools, and a plain
// client the page the SDK itself would encode without them.
func TestAppsToolsListStdio(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	for _, apps := range []bool{false, true} {
		srv, err := New(a.opts(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		caps := `{}`
		if apps {
			caps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
		}
		cached := rawSessionCaps(t, srv, true, caps).call("tools/list", `{}`)
		sdk := rawSessionCaps(t, srv, false, caps).call("tools/list", `{}`)
		srv.Close()
		if cached != sdk {
			t.Fatalf("apps %v: pre-encoded page differs:\n%.400s\n%.400s", apps, cached, sdk)
		}
		if got := strings.Contains(cached, `"name":"app_escalate_attention"`); got != apps {
			t.Fatalf("apps %v: app-only tool listed %v", apps, got)
		}
		if got := strings.Contains(cached, `"resourceUri":"ui://openadapt-agent/attention"`); got != apps {
			t.Fatalf("apps %v: card link listed %v", apps, got)
		}
	}
	// A 2026-07-28 request carries its client's capabilities itself.
	srv, err := New(a.opts(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := rawSessionCaps(t, srv, true, `{}`)
	meta := func(caps string) string {
		return `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}`
	}
	if page := r.call("tools/list", meta(`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`)); !strings.Contains(page, `"name":"app_escalate_attention"`) {
		t.Fatalf("2026-07-28 Apps request: %.300s", page)
	}
	if page := r.call("tools/list", meta(`{}`)); strings.Contains(page, `"name":"app_escalate_attention"`) || strings.Contains(page, `"ui":`) {
		t.Fatalf("2026-07-28 plain request: %.300s", page)
	}
}

// rawSessionCaps is a raw JSON-RPC session whose initialize carries caps;
// asServe: through the pre-encoded tools/list pages like Serve.
func rawSessionCaps(t *testing.T, s *Server, asServe bool, caps string) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr := &stdio.Transport{In: inR, Out: outW}
	if asServe {
		tr.Rewritable = []string{"tools/list"}
		s.conn.Store(tr)
	} else {
		s.conn.Store(nil)
	}
	ss, err := s.mcp.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rawSession{t: t, in: inW, out: bufio.NewReaderSize(outR, 8<<20), done: make(chan struct{})}
	go func() { ss.Wait(); outW.Close(); close(r.done) }()
	t.Cleanup(func() { inW.Close(); <-r.done })
	r.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// TestAppOnlyDecisionIdentical: a decision through the app-only tool is
// the model-visible tool's decision: the same elicitation, the same
// request to the helper (digest and idempotency key included), the same
// result; and the same key through either tool is a replay.
func TestAppOnlyDecisionIdentical(t *testing.T) {
	t.Parallel()
	const key = "identity-key-000000001"
	type outcome struct {
		result  map[string]any
		asked   []string
		acts    []map[string]any
		runsDir string
	}
	decide := func(tool string) outcome {
		a := newAttEnv(t, "")
		var asked []string
		s := clientSession(t, a.opts(), appsCaps(), func(r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			b, _ := json.Marshal(r.Params)
			asked = append(asked, string(b))
			return accept(r)
		})
		got := s.call(tool, a.args(key, "request_assistance", true))
		return outcome{got, asked, a.acts(), a.runsDir}
	}
	model, app := decide("escalate_attention"), decide("app_escalate_attention")
	if model.result["status"] != "escalated" {
		t.Fatalf("model-visible decision %v", model.result)
	}
	norm := func(o outcome) string {
		b, _ := json.Marshal(map[string]any{"result": o.result, "asked": o.asked, "acts": o.acts})
		return strings.ReplaceAll(string(b), o.runsDir, "<runs>")
	}
	if norm(model) != norm(app) {
		t.Fatalf("decisions differ:\nmodel %s\napp   %s", norm(model), norm(app))
	}
	if len(app.acts) != 1 || app.acts[0]["idempotency_key"] != key || !strings.HasPrefix(app.acts[0]["capability_digest"].(string), "sha256:") || len(app.asked) != 1 {
		t.Fatalf("helper requests %v", app.acts)
	}

	// One server, one key: the model-visible tool decides, the app-only
	// tool with the same key replays that decision.
	a := newAttEnv(t, "")
	s := clientSession(t, a.opts(), appsCaps(), accept)
	first := s.call("escalate_attention", a.args(key, "request_assistance", true))
	again := s.call("app_escalate_attention", a.args(key, "request_assistance", true))
	if first["decision_id"] == nil || first["decision_id"] != again["decision_id"] {
		t.Fatalf("replay: %v then %v", first, again)
	}
	fresh := s.call("app_escalate_attention", a.args("identity-key-000000002", "request_assistance", true))
	if fresh["decision_id"] == first["decision_id"] {
		t.Fatalf("a new key replayed: %v", fresh)
	}
}

// TestAttendedAppOnlyMode: with --attended-actions app-only a plain client
// has no attended tool at all, and an Apps client only the app-only ones.
func TestAttendedAppOnlyMode(t *testing.T) {
	t.Parallel()
	a := newAttEnv(t, "")
	o := a.opts()
	o.AttendedActions = AttendedAppOnly
	stderr := &syncBuffer{}
	srv, err := New(o, stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	plain := attachClient(t, srv, stderr, nil, accept, false)
	for _, name := range toolNames(plain) {
		if strings.HasSuffix(name, "_attention") && name != toolListAttention {
			t.Errorf("plain client lists %s", name)
		}
	}
	for _, name := range []string{"escalate_attention", "reject_attention", "teach_attention", "app_escalate_attention"} {
		_, err := plain.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: a.args("mode-key-00000000001", "request_assistance", true)})
		if err == nil || !strings.Contains(err.Error(), stdio.MsgUnknownTool) {
			t.Errorf("plain client called %s: %v", name, err)
		}
	}
	apps := attachClient(t, srv, stderr, appsCaps(), accept, false)
	var attended []string
	for _, name := range toolNames(apps) {
		if strings.HasSuffix(name, "_attention") && name != toolListAttention {
			attended = append(attended, name)
		}
	}
	if strings.Join(attended, " ") != "app_reject_attention app_teach_attention app_escalate_attention" {
		t.Fatalf("Apps client lists %v", attended)
	}
	got := apps.call("app_escalate_attention", a.args("mode-key-00000000002", "request_assistance", true))
	if got["status"] != "escalated" {
		t.Fatalf("app-only decision %v", got)
	}
}

func TestAttendedActionsFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.opts()
	o.AttendedActions = "model-only"
	_, err := New(o, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || !ce.Flag || !strings.Contains(ce.Msg, "--attended-actions") {
		t.Fatalf("err %v", err)
	}
}
