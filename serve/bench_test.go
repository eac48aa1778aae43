package serve

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkNew is server construction (validation, discovery of the bundles
// under SERVE_BENCH_BUNDLES, e.g. `go run ./bench/genbundles -out DIR`,
// and tool registration). Skipped without the variable.
func BenchmarkNew(b *testing.B) {
	dir := os.Getenv("SERVE_BENCH_BUNDLES")
	if dir == "" {
		b.Skip("SERVE_BENCH_BUNDLES not set")
	}
	runs := filepath.Join(b.TempDir(), "runs")
	for b.Loop() {
		s, err := New(Options{Bundles: dir, RunsDir: runs, Timeout: 600, RunWait: 40, AllowRun: true, AuditLog: "off", Environ: []string{}}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}

// BenchmarkReadRoundTrip is one get_workflow call through the go-sdk client
// and server over in-memory transports.
func BenchmarkReadRoundTrip(b *testing.B) {
	root := b.TempDir()
	writeBundle(b, filepath.Join(root, "bundles", "demo"), testBundle{name: "Demo", params: map[string]string{"note": "x"}, intents: []string{"a", "b"}, salt: "bench"})
	s, err := New(Options{Bundles: filepath.Join(root, "bundles"), RunsDir: filepath.Join(root, "runs"), Timeout: 600, RunWait: 40, AuditLog: "off", Environ: []string{}}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.MCPServer().Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	id := s.catalog.cat.workflows[0].id
	args := map[string]any{"workflow": id}
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_workflow", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkServeReadRoundTrip is one get_workflow call through Serve's own
// stdio transport (pipes, no go-sdk client): the frame parse, the
// go-sdk dispatch, the tool middleware and the result encoding, as a real
// client sees them. bench/servebench times the same path as a process.
func BenchmarkServeReadRoundTrip(b *testing.B) {
	root := b.TempDir()
	writeBundle(b, filepath.Join(root, "bundles", "demo"), testBundle{name: "Demo", params: map[string]string{"note": "x"}, intents: []string{"a", "b"}, salt: "bench"})
	s, err := New(Options{Bundles: filepath.Join(root, "bundles"), RunsDir: filepath.Join(root, "runs"), Timeout: 600, RunWait: 40, AuditLog: "off", Environ: []string{}}, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), inR, outW) }()
	rd := bufio.NewReaderSize(outR, 1<<20)
	call := func(frame string) string {
		if _, err := io.WriteString(inW, frame+"\n"); err != nil {
			b.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		return line
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	frame := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_workflow","arguments":{"workflow":"` + s.catalog.cat.workflows[0].id + `"}}}`
	if r := call(frame); !strings.Contains(r, `"isError":false`) && strings.Contains(r, `"isError":true`) {
		b.Fatal(r)
	}
	for b.Loop() {
		call(frame)
	}
	inW.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
