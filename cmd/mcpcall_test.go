package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// mcpCall is the `mcp-call TOOL ARGS_JSON [SERVE_FLAGS...]` script command:
// it starts `openadapt-agent serve SERVE_FLAGS...` as a real process through
// mcp.CommandTransport, connects a go-sdk client over stdio, calls TOOL and
// prints the structuredContent as indented JSON on stdout. TOOL "tools/list"
// prints the tool names instead, one per line. The server inherits PATH,
// HOME and every variable named in $MCP_CALL_ENV (space separated). With !,
// the call must return an isError result.
func mcpCall(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: mcp-call TOOL ARGS_JSON [SERVE_FLAGS...]")
	}
	tool, rawArgs := args[0], args[1]
	cmd := exec.Command("openadapt-agent", append([]string{"serve"}, args[2:]...)...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = []string{"PATH=" + ts.Getenv("PATH"), "GORACE=" + ts.Getenv("GORACE"), "HOME=" + ts.Getenv("HOME")}
	for _, name := range strings.Fields(ts.Getenv("MCP_CALL_ENV")) {
		cmd.Env = append(cmd.Env, name+"="+ts.Getenv(name))
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-call", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		ts.Fatalf("mcp-call: connect: %v\n%s", err, stderr)
	}
	defer func() {
		cs.Close()
		fmt.Fprint(ts.Stderr(), stderr.String())
	}()
	if tool == "tools/list" {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			ts.Fatalf("mcp-call: tools/list: %v", err)
		}
		for _, t := range res.Tools {
			fmt.Fprintln(ts.Stdout(), t.Name)
		}
		return
	}
	var a map[string]any
	if err := json.Unmarshal([]byte(rawArgs), &a); err != nil {
		ts.Fatalf("mcp-call: ARGS_JSON: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		ts.Fatalf("mcp-call: %s: %v", tool, err)
	}
	out, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
	fmt.Fprintln(ts.Stdout(), string(out))
	if res.IsError != neg {
		ts.Fatalf("mcp-call: isError %v", res.IsError)
	}
}
