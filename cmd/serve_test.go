package cmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeStdoutPurity runs the real binary over stdio with bundles that
// fail to load, a missing Flow and bad input, and checks that every stdout
// line is one JSON-RPC message and that stdin EOF exits 0 (docs/mcp.md,
// Streams). It talks to the server one request at a time.
func TestServeStdoutPurity(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bundles := filepath.Join(root, "bundles")
	if err := os.CopyFS(filepath.Join(bundles, "good"), os.DirFS("../testdata/flow/plain/mockmed-triage-v3")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(bundles, "tampered"), os.DirFS("../testdata/flow/tampered/workflow-edited")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(bundles, "good"), filepath.Join(bundles, "linked"))
	cmd := exec.Command("openadapt-agent", "serve", "--bundles", bundles, "--allow-run", "--runs-dir", filepath.Join(root, "runs"), "--flow-cli", filepath.Join(root, "missing-flow"))
	cmd.Env = childEnv("HOME=" + root)
	stdin, _ := cmd.StdinPipe()
	stdoutPipe, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	var all []string
	go func() {
		sc := bufio.NewScanner(stdoutPipe)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() map[string]any {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed early")
			}
			all = append(all, l)
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("stdout line is not JSON: %q", l)
			}
			return m
		case <-time.After(20 * time.Second):
			t.Fatal("no reply")
		}
		return nil
	}
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := next()
	tools := list["result"].(map[string]any)["tools"].([]any)
	var run string
	for _, tl := range tools {
		if n := tl.(map[string]any)["name"].(string); strings.HasPrefix(n, "run_workflow_") {
			run = n
		}
	}
	if len(tools) != 6 || run == "" {
		t.Fatalf("tools: %v", tools)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + run + `","arguments":{"note":"x"}}}`)
	if m := next(); !strings.Contains(toJSON(m), `"code":"flow_not_found"`) {
		t.Fatalf("run: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"nope/Jane Roe"}`)
	if m := next(); !strings.Contains(toJSON(m), `-32601`) {
		t.Fatalf("unknown method: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"ping"`)
	if m := next(); !strings.Contains(toJSON(m), `-32700`) || m["id"] != 5.0 {
		t.Fatalf("malformed: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"Jane Roe"}}`)
	if m := next(); !strings.Contains(toJSON(m), `"Unknown tool."`) {
		t.Fatalf("unknown tool: %v", m)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	next()
	stdin.Close()
	for l := range lines {
		all = append(all, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	for _, l := range all {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["jsonrpc"] != "2.0" || strings.Contains(l, "Jane Roe") {
			t.Fatalf("impure stdout line %q", l)
		}
	}
	errText := stderr.String()
	if !strings.Contains(errText, "2 workflow(s) could not be loaded safely; details stay local") || !strings.Contains(errText, "openadapt-flow was not found") {
		t.Fatalf("stderr: %s", errText)
	}
	if strings.Contains(errText, "Jane Roe") || strings.Contains(errText, "mockmed") {
		t.Fatalf("stderr leaks: %s", errText)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestServeOversizeFrame (docs/mcp.md, Bounded frames) on the real binary: a
// 5 MiB request with
// its id first gets a -32600 reply with that id, the preceding initialize
// reply is not lost, and the process exits 1 with the documented stderr line.
func TestServeOversizeFrame(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "bundles"), 0o755)
	cmd := exec.Command("openadapt-agent", "serve", "--bundles", filepath.Join(root, "bundles"), "--runs-dir", filepath.Join(root, "runs"))
	cmd.Env = childEnv("HOME=" + root)
	stdin, _ := cmd.StdinPipe()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":"big","method":"tools/list","params":{"x":"`+strings.Repeat("a", 5<<20)+`"}}`+"\n")
	stdin.Close()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, `"id":1,"result"`) || !strings.Contains(out, `{"jsonrpc":"2.0","id":"big","error":{"code":-32600,"message":"Request exceeds the 4 MiB frame limit."}}`) {
		t.Fatalf("stdout: %.500s", out)
	}
	if !strings.Contains(stderr.String(), "serve: an inbound frame exceeded 4 MiB; session closed") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}
