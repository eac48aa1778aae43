package serve

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP Apps (docs/mcp.md "MCP Apps"): two cards served as ui:// resources,
// linked from the tools whose results they render, and app-only variants
// of the attended actions that only a card's buttons call. Hosts, not this
// server, hide app-only tools from the model, so the cards' links and the
// app-only tools are listed only to a client that advertises the Apps
// extension; every other client sees the tool list it always saw.

// The cards' resource URIs, their MIME type and the extension's name.
const (
	cardRun       = "ui://openadapt-agent/run"
	cardAttention = "ui://openadapt-agent/attention"
	appsMIME      = "text/html;profile=mcp-app"
	appsExtension = "io.modelcontextprotocol/ui"
	// appToolPrefix names an attended action's app-only variant.
	appToolPrefix = "app_"
)

// AttendedActions values: "both" lists the model-visible attended tools and
// their app-only variants; "app-only" registers only the app-only variants.
const (
	AttendedBoth    = "both"
	AttendedAppOnly = "app-only"
)

var (
	//go:embed apps/card.css
	cardCSS string
	//go:embed apps/bridge.js
	cardBridge string
	//go:embed apps/run.js
	cardRunJS string
	//go:embed apps/attention.js
	cardAttentionJS string
	//go:embed apps/card.html
	cardPage string
)

// cardHTML is one card's page: the shared page, style and bridge with the
// card's own script. The Content-Security-Policy allows exactly these
// inline style and script elements (by their sha256) and nothing else: no
// network, no other script, style, font, image or frame.
func cardHTML(title, script string) string {
	js := cardBridge + "\n" + script
	hash := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
	}
	csp := "default-src 'none'; script-src " + hash(js) + "; style-src " + hash(cardCSS) +
		"; img-src 'none'; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; form-action 'none'"
	return strings.NewReplacer("{{CSP}}", csp, "{{TITLE}}", title, "{{STYLE}}", cardCSS, "{{SCRIPT}}", js).Replace(cardPage)
}

// appCards are the served cards, by URI, in resources/list order.
var appCards = []struct {
	uri, name, title, desc string
	html                   string
}{
	{cardRun, "run_card", "Run card", "A governed run: its status, the decision fields, step counts and elapsed time, and for a halt its Needs Attention item.",
		cardHTML("Run", cardRunJS)},
	{cardAttention, "attention_card", "Needs Attention card", "A Needs Attention item: its category, allowed actions, capability digest prefix and expiry, with one button per allowed action.",
		cardHTML("Needs Attention", cardAttentionJS)},
}

// addCards serves the cards through resources/list and resources/read.
func addCards(s *mcp.Server) {
	for _, c := range appCards {
		html := c.html
		uri := c.uri
		s.AddResource(&mcp.Resource{URI: c.uri, Name: c.name, Title: c.title, Description: c.desc, MIMEType: appsMIME},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
					URI: uri, MIMEType: appsMIME, Text: html,
					Meta: mcp.Meta{"ui": map[string]any{"prefersBorder": true}},
				}}}, nil
			})
	}
}

// cardFor is the card that renders a tool's results ("" for none): the run
// card for every run tool and get_run_report, the attention card for the
// Needs Attention tools and the attended actions' app-only variants.
func cardFor(d toolDef) string {
	switch {
	case d.run || d.name == toolGetRunReport:
		return cardRun
	case d.name == toolListAttention || d.name == toolGetAttention || d.appOnly:
		return cardAttention
	}
	return ""
}

// appsClient reports whether the client of req advertised the Apps
// extension with the cards' MIME type: in its initialize request, or for a
// 2026-07-28 request in the request's own client capabilities.
func appsClient(req mcp.Request) bool {
	r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
	})
	if !ok || r == nil {
		return false
	}
	caps := r.ClientCapabilities()
	if caps == nil {
		return false
	}
	ext, ok := caps.Extensions[appsExtension].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	return slices.Contains(types, any(appsMIME))
}

// appsMeta is a tool's _meta as an Apps client sees it: its own _meta with
// the ui link added.
func appsMeta(e *toolEntry) mcp.Meta {
	ui := map[string]any{"resourceUri": e.ui}
	if e.appOnly {
		ui["visibility"] = []string{"app"}
	}
	m := maps.Clone(e.tool.Meta)
	if m == nil {
		m = mcp.Meta{}
	}
	m["ui"] = ui
	return m
}
