package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeEndlessInput: `serve </dev/zero` (a frame that never ends, with
// no newline ever) answers the over-size frame with -32600 and a null id
// and exits 1 after reading about one frame's worth, instead of reading
// forever.
func TestServeEndlessInput(t *testing.T) {
	t.Parallel()
	bundles := t.TempDir()
	writeTestBundle(t, filepath.Join(bundles, "a"), map[string]any{"schema_version": 3, "name": "a", "params": map[string]any{}, "steps": []any{}}, nil, nil)
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip("no /dev/zero")
	}
	defer zero.Close()
	c := exec.Command("openadapt-agent", "serve", "--bundles", bundles)
	c.Env = childEnv("HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	var out, errb bytes.Buffer
	c.Stdin, c.Stdout, c.Stderr = zero, &out, &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard, not a timing assertion
		c.Process.Kill()
		<-done
		t.Fatal("serve </dev/zero kept reading")
	}
	if code := c.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var reply struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &reply) != nil || string(reply.ID) != "null" || reply.Error.Code != -32600 {
		t.Fatalf("stdout %q", out.String())
	}
}
