package cmd

import (
	"archive/zip"
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkShutdownLatency measures, per long-running command, the time
// from SIGTERM to the process's exit, with the signal sent once the child is
// observed inside its long work (a read of the big input, seen through
// inotify; serve: its banner). It reports the median wall latency and the
// child's median CPU time (user+system) per run. OPENADAPT_AGENT_BIN picks
// the binary (default: openadapt-agent on PATH, the test binary).
//
//	CGO_ENABLED=0 go build -o /tmp/oa ./cmd/openadapt-agent
//	OPENADAPT_AGENT_BIN=/tmp/oa go test ./cmd -run '^$' -bench ShutdownLatency -benchtime 7x
func BenchmarkShutdownLatency(b *testing.B) {
	bin := os.Getenv("OPENADAPT_AGENT_BIN")
	if bin == "" {
		bin = "openadapt-agent"
	}
	dir := b.TempDir()

	bundleDir := filepath.Join(dir, "bundle")
	huge := hugeBundle(b, bundleDir)

	// The snapshot evidence root (a copy: the watch must see only this
	// child's reads). No valid ledger can be made big enough to keep ledger
	// verify busy, so its figure includes finishing the verification.
	ledgerRoot := filepath.Join(dir, "ledger")
	if err := os.CopyFS(ledgerRoot, os.DirFS(filepath.Join("..", "testdata", "ledger", "snapshot"))); err != nil {
		b.Fatal(err)
	}
	ledgerFile := filepath.Join(ledgerRoot, "production-workflow-admissions.json")

	archive := filepath.Join(dir, "demo.zip")
	{ // a 200 MiB skill archive (one stored entry of zeros)
		f, _ := os.Create(archive)
		zw := zip.NewWriter(f)
		zw.Create("demo/")
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "demo/big.bin", Method: zip.Store})
		zero := make([]byte, 1<<20)
		for range 200 {
			w.Write(zero)
		}
		zw.Close()
		f.Close()
	}

	serveBundles := filepath.Join(dir, "serve")
	writeTestBundle(b, filepath.Join(serveBundles, "a"), map[string]any{"schema_version": 3, "name": "a", "params": map[string]any{"note": "x"}, "steps": []any{}}, nil, nil)

	cases := []struct {
		name  string
		args  []string
		watch string // observe a read of this file; "" = the serve banner
	}{
		{"bundle-verify-1TiB-asset", []string{"bundle", "verify", bundleDir}, huge},
		{"ledger-verify-snapshot-root", []string{"ledger", "verify", ledgerRoot, "--at", "2026-11-30"}, ledgerFile},
		{"skill-verify-200MiB", []string{"skill", "verify", archive}, archive},
		{"serve-idle", []string{"serve", "--bundles", serveBundles}, ""},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var wall, cpu []time.Duration
			exits := map[int]int{}
			for b.Loop() {
				b.StopTimer()
				c := exec.Command(bin, tc.args...)
				c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + dir, "XDG_CACHE_HOME=" + dir}
				se, _ := c.StderrPipe()
				c.Stdout = io.Discard
				stdin, _ := c.StdinPipe()
				var w interface {
					Wait(time.Duration) bool
					Close()
				}
				if tc.watch != "" {
					w = watchRead(b, tc.watch)
				}
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
				rd := bufio.NewReader(se)
				if w != nil {
					if !w.Wait(signalDeadline) {
						c.Process.Kill()
						b.Fatalf("%s: input never read", tc.name)
					}
					w.Close()
				} else if line, err := rd.ReadString('\n'); err != nil || !strings.Contains(line, "serving") {
					c.Process.Kill()
					b.Fatalf("banner %q %v", line, err)
				}
				go io.Copy(io.Discard, rd)
				t0 := time.Now()
				c.Process.Signal(syscall.SIGTERM)
				c.Wait()
				wall = append(wall, time.Since(t0))
				cpu = append(cpu, c.ProcessState.UserTime()+c.ProcessState.SystemTime())
				exits[c.ProcessState.ExitCode()]++
				stdin.Close()
				b.StartTimer()
			}
			slices.Sort(wall)
			slices.Sort(cpu)
			b.ReportMetric(float64(wall[len(wall)/2].Microseconds())/1000, "ms-wall-median")
			b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "ms-cpu-median")
			b.ReportMetric(float64(wall[len(wall)-1].Microseconds())/1000, "ms-wall-max")
			b.Logf("exit codes %v", exits)
		})
	}
}
