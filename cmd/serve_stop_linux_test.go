package cmd

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/attention"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

// TestServeSIGTERMDuringElicitation: the real binary, an attended Reject
// waiting on a confirmation form the client never answers, and SIGTERM
// (or the end of stdin). The pending call is answered with
// server_stopping, nothing reaches the helper, and the process exits 0 on
// its own (not 143 from the backstop). The test waits on events (the
// elicitation request on stdout, the reply, the exit), never on time.
func TestServeSIGTERMDuringElicitation(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"SIGTERM", "end of input"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			stopDuringElicitation(t, how)
		})
	}
}

func stopDuringElicitation(t *testing.T, how string) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	record := filepath.Join(dir, "record")
	os.MkdirAll(runs, 0o700)
	os.MkdirAll(record, 0o700)
	src, _ := filepath.Abs("../testdata/flow/attended/runs/run-0001")
	if out, err := exec.Command("cp", "-a", src, filepath.Join(runs, "run-0001")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	os.Chmod(filepath.Join(runs, "run-0001", ".attended_capability.key"), 0o600)
	item, err := attention.Get(runs, attention.ID("run-0001"))
	if err != nil || item.Capability == nil {
		t.Fatalf("fixture item: %v", err)
	}
	bundles := filepath.Join(dir, "bundles")
	writeTestBundle(t, filepath.Join(bundles, "a"), map[string]any{"schema_version": 3, "name": "a", "params": map[string]any{}, "steps": []any{}}, nil, nil)

	c := exec.Command("openadapt-agent", "serve", "--bundles", bundles, "--allow-attended-actions",
		"--runs-dir", runs, "--flow-python", fakehelper.Install(t), "--audit-log", "off")
	c.Env = childEnv("HOME="+dir, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"OPENADAPT_FAKE_HELPER_RECORD="+record, "OPENADAPT_FAKE_FLOW_VERSION=1.32.0")
	stdin, _ := c.StdinPipe()
	stdout, _ := c.StdoutPipe()
	stderr, _ := c.StderrPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var errText strings.Builder
	go func() { io.Copy(&errText, stderr); c.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			c.Process.Kill()
		}
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) map[string]json.RawMessage {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stdout ended waiting for %s; stderr %q", what, errText.String())
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("stdout line %q: %v", l, err)
			}
			return m
		case <-time.After(time.Minute): // a hang guard, not a timing assertion
			t.Fatalf("no %s on stdout; stderr %q", what, errText.String())
		}
		return nil
	}
	send := func(s string) { io.WriteString(stdin, s+"\n") }

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	next("the initialize reply")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	args, _ := json.Marshal(map[string]any{"attention_id": item.ID, "capability_digest": item.Capability.Digest, "idempotency_key": "stop-key-000000001", "confirmed_reject": true})
	send(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"reject_attention","arguments":` + string(args) + `}}`)
	for {
		m := next("the elicitation request")
		if string(m["method"]) == `"elicitation/create"` {
			break // left unanswered
		}
		if string(m["id"]) == `"call-1"` {
			t.Fatalf("the call was answered before any elicitation: %s", m["result"])
		}
	}
	if how == "SIGTERM" {
		c.Process.Signal(syscall.SIGTERM)
	} else {
		stdin.Close()
	}
	var reply map[string]json.RawMessage
	for reply == nil {
		m := next("the call's reply")
		if string(m["id"]) == `"call-1"` {
			reply = m
		}
	}
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Error struct{ Code string } `json:"error"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(reply["result"], &res); err != nil || !res.IsError || res.StructuredContent.Error.Code != "server_stopping" {
		t.Fatalf("reply %s, want the server_stopping failure", reply["result"])
	}
	select {
	case <-exited:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		t.Fatal("serve did not exit after SIGTERM")
	}
	if code := c.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d (143 is the backstop), stderr %q", code, errText.String())
	}
	for _, r := range fakehelper.Requests(t, record) {
		if r["op"] == "attended.act" {
			t.Fatalf("an attended action reached the helper: %v", r)
		}
	}
}
