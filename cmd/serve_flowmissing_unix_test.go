//go:build unix

package cmd

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeFlowMissing runs the real binary with a PATH that has no
// openadapt-flow: --mode attended and the tutorial still start and serve
// (docs/mcp.md, Missing Flow), every tool that needs Flow answers
// flow_not_found, stderr names the program and the fix, and --authoring
// still stops at startup with that message.
func TestServeFlowMissing(t *testing.T) {
	t.Parallel()
	exe, err := exec.LookPath("openadapt-agent")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bundles := filepath.Join(root, "bundles")
	if err := os.CopyFS(filepath.Join(bundles, "good"), os.DirFS("../testdata/flow/plain/mockmed-triage-v3")); err != nil {
		t.Fatal(err)
	}
	emptyPath := filepath.Join(root, "bin") // no openadapt-flow anywhere
	if err := os.Mkdir(emptyPath, 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + emptyPath, "HOME=" + root, "GORACE=" + os.Getenv("GORACE")}

	session := func(t *testing.T, calls func(call func(name, args string) map[string]any, tools []string), args ...string) string {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"serve", "--runs-dir", filepath.Join(root, "runs-"+strings.ReplaceAll(t.Name(), "/", "-"))}, args...)...)
		cmd.Env = env
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 16)
		go func() {
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 1<<20), 8<<20)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		id := 0
		rpc := func(method, params string) map[string]any {
			t.Helper()
			id++
			io.WriteString(stdin, `{"jsonrpc":"2.0","id":`+itoa(id)+`,"method":"`+method+`","params":`+params+"}\n")
			select {
			case l, ok := <-lines:
				var m map[string]any
				if !ok || json.Unmarshal([]byte(l), &m) != nil {
					t.Fatalf("%s: no reply (%q); stderr:\n%s", method, l, stderr.String())
				}
				return m
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: no reply; stderr:\n%s", method, stderr.String())
			}
			return nil
		}
		rpc("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}`)
		io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		var tools []string
		for _, tl := range rpc("tools/list", `{}`)["result"].(map[string]any)["tools"].([]any) {
			tools = append(tools, tl.(map[string]any)["name"].(string))
		}
		calls(func(name, args string) map[string]any {
			r := rpc("tools/call", `{"name":"`+name+`","arguments":`+args+`}`)
			res, _ := r["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			return sc
		}, tools)
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
		return stderr.String()
	}
	flowNotFound := func(t *testing.T, r map[string]any, what string) {
		t.Helper()
		e, _ := r["error"].(map[string]any)
		if e["code"] != "flow_not_found" || !strings.Contains(e["recovery"].(string), "install openadapt-flow") {
			t.Errorf("%s: %v", what, r)
		}
	}
	wantStderr := func(t *testing.T, stderr string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr)
			}
		}
		if strings.Contains(stderr, "could not be determined") {
			t.Errorf("stderr:\n%s", stderr)
		}
	}

	t.Run("attended", func(t *testing.T) {
		stderr := session(t, func(call func(string, string) map[string]any, tools []string) {
			var run string
			for _, n := range tools {
				if strings.HasPrefix(n, "run_workflow_") {
					run = n
				}
			}
			if run == "" || !strings.Contains(strings.Join(tools, " "), "reject_attention") {
				t.Fatalf("tools %v", tools)
			}
			r := call(run, `{"note":"x"}`)
			flowNotFound(t, r, "run")
			if r["record_changed"] != "no" || r["safe_to_retry"] != true || r["next_step"] != "fix_setup" {
				t.Errorf("decision fields %v", r)
			}
			flowNotFound(t, call("reject_attention", `{"attention_id":"000000000000000000000000","capability_digest":"sha256:`+strings.Repeat("0", 64)+`","idempotency_key":"flow-missing-0001","confirmed_reject":true}`), "reject")
			if r := call("list_workflows", `{}`); r["workflows"] == nil {
				t.Errorf("list_workflows %v", r)
			}
		}, "--mode", "attended", "--bundles", bundles)
		wantStderr(t, stderr, "attended decisions unavailable (openadapt-flow not found)",
			"openadapt-flow was not found; run tools and attended actions will fail with flow_not_found; install openadapt-flow so that it is on PATH, or pass --flow-cli")
	})
	t.Run("tutorial", func(t *testing.T) {
		stderr := session(t, func(call func(string, string) map[string]any, tools []string) {
			r := call("run_local_quickstart", `{}`)
			flowNotFound(t, r, "run_local_quickstart")
		}, "--allow-run")
		wantStderr(t, stderr, "tutorial unavailable (openadapt-flow not found)")
	})
	t.Run("authoring fails closed", func(t *testing.T) {
		cmd := exec.Command(exe, "serve", "--authoring", "--runs-dir", filepath.Join(root, "runs-authoring"))
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
			!strings.Contains(string(out), "serve: openadapt-flow was not found: install openadapt-flow so that it is on PATH, or pass --flow-cli") {
			t.Fatalf("exit %v: %s", err, out)
		}
	})
}
