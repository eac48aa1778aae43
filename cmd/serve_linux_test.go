//go:build linux

package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/procwait"
)

// TestServeKill9Reconciles (docs/runs.md, Long runs and interruption): a
// server killed with SIGKILL mid-run
// leaves a running record; the next server on the same runs dir marks it
// interrupted and terminates the orphaned Flow group (the fake ignores
// SIGTERM, so only the group SIGKILL ends it).
func TestServeKill9Reconciles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	bundles := "../testdata/flow/plain"
	args := []string{"serve", "--bundles", bundles, "--allow-run", "--runs-dir", runs, "--run-wait", "1"}
	ready := filepath.Join(root, "ready.fifo")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	env := childEnv("HOME="+root, "OPENADAPT_FAKE_FLOW_MODE=hang-ignore-term", "OPENADAPT_FAKE_FLOW_READY="+ready)
	cmd := exec.Command("openadapt-agent", args...)
	cmd.Env = env
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_workflow_70323b828fe8286e021894bf", Arguments: map[string]any{"note": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &r)
	if r["status"] != "running" {
		t.Fatalf("%v", r)
	}
	runID := r["run_id"].(string)
	recPath := filepath.Join(runs, ".openadapt-agent", "runs", runID+".json")
	var rec struct {
		PID   int    `json:"pid"`
		Phase string `json:"phase"`
	}
	data, _ := os.ReadFile(recPath)
	json.Unmarshal(data, &rec)
	if rec.PID == 0 || rec.Phase != "running" {
		t.Fatalf("record %s", data)
	}
	// Wait until the fake Flow ignores SIGTERM (the server's Pdeathsig), so
	// killing the server now cannot end it before it is in place.
	readyc := make(chan error, 1)
	go func() {
		f, err := os.Open(ready)
		if err == nil {
			_, err = f.Read(make([]byte, 1))
			f.Close()
		}
		readyc <- err
	}()
	select {
	case err := <-readyc:
		if err != nil {
			t.Fatalf("waiting for the fake Flow: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the fake Flow never reported ready")
	}
	cmd.Process.Kill()
	cs.Close() // the CommandTransport reaps the killed server
	if !pidRunning(rec.PID) {
		t.Fatal("the fake Flow did not survive the server (test premise)")
	}
	// Restart: reconciliation at startup.
	cmd2 := exec.Command("openadapt-agent", args...)
	cmd2.Env = env
	cs2, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	res, err = cs2.CallTool(ctx, &mcp.CallToolParams{Name: "get_run_report", Arguments: map[string]any{"run_id": runID}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"status":"interrupted"`) {
		t.Fatalf("after restart: %s", b)
	}
	if !procwait.Exit(rec.PID, time.Minute) && pidRunning(rec.PID) {
		t.Fatalf("orphaned Flow %d still runs after reconciliation", rec.PID)
	}
}

func pidRunning(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// TestServeSIGTERM (docs/mcp.md, Shutdown): SIGTERM with a run in progress
// records it
// interrupted, terminates Flow, and exits 0 within the hosts' 5 s window.
func TestServeSIGTERM(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, "runs")
	cmd := exec.Command("openadapt-agent", "serve", "--bundles", "../testdata/flow/plain", "--allow-run", "--runs-dir", runs, "--run-wait", "1")
	cmd.Env = childEnv("HOME="+root, "OPENADAPT_FAKE_FLOW_MODE=hang")
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	rd.ReadString('\n')
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_workflow_70323b828fe8286e021894bf","arguments":{"note":"x"}}}`+"\n")
	line, _ := rd.ReadString('\n')
	i := strings.Index(line, `run-`)
	if !strings.Contains(line, `\"status\": \"running\"`) || i < 0 {
		t.Fatalf("%s", line)
	}
	runID := line[i : i+28]
	var rec struct {
		PID int `json:"pid"`
	}
	data, _ := os.ReadFile(filepath.Join(runs, ".openadapt-agent", "runs", runID+".json"))
	json.Unmarshal(data, &rec)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	data, _ = os.ReadFile(filepath.Join(runs, ".openadapt-agent", "runs", runID+".json"))
	if !strings.Contains(string(data), `"status":"interrupted"`) {
		t.Fatalf("record %s", data)
	}
	if pidRunning(rec.PID) {
		t.Fatalf("Flow %d survived", rec.PID)
	}
}
