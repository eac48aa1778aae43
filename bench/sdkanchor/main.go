// Command sdkanchor is the anchor of the serve read-round-trip target (a ratio
// to it, measured side by side): a bare go-sdk v1.8.0 server over the SDK's
// own stdio transport with one trivial tool, get_workflow, whose raw handler
// returns a fixed text result. bench/servebench -anchor drives it side by side
// with `openadapt-agent serve`.
//
// Usage:
//
//	sdkanchor [-reply-bytes N]
//
// -reply-bytes pads the text result to N bytes (default: a two-byte "ok"), so
// the anchor can also be timed with the reply size of the real get_workflow.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	replyBytes := flag.Int("reply-bytes", 2, "bytes of the text result")
	flag.Parse()
	text := "ok"
	if *replyBytes > 2 {
		text = strings.Repeat("x", *replyBytes)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "sdkanchor", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{
		Name:        "get_workflow",
		Description: "Returns a fixed text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"workflow":{"type":"string"}},"additionalProperties":false}`),
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "sdkanchor:", err)
		os.Exit(1)
	}
}
