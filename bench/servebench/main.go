// Command servebench times `openadapt-agent serve` as a whole process over
// real stdio (BENCHMARKS.md, area serve):
//
//   - start: process start to the tools/list reply, cold (no digest cache)
//     and warm (the second start, with the cache the first one wrote), and
//     the peak RSS (VmHWM) of each server;
//   - read: get_workflow round trips (p50, p90, p99), side by side and call
//     by call in turn: the server with the audit log off, with it on, and,
//     with -anchor, bench/sdkanchor (a bare go-sdk stdio server with one
//     trivial tool);
//   - run: run-tool round trips against an instant fake Flow, minus the
//     same fake Flow executed directly (p50 overhead);
//   - list: list_workflows round trips with the default arguments (its
//     first page where the tool pages), p50 and p90 and the reply size, in
//     every mode.
//
// Warm and cold starts alternate (cold, warm, cold, warm, …) so both see
// the same machine load. With -cold 0 only warm starts are timed (one
// untimed start writes the cache first), which is what the 10,000-bundle
// slope needs when cold starts are slow.
//
// Usage:
//
//	go run ./bench/servebench -bin BIN -flow FAKEFLOW -bundles DIR [-mode per-workflow] [-anchor SDKANCHOR] [-starts 7] [-cold 7] [-reads 1000] [-runs 200] [-lists 200]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	bin := flag.String("bin", "", "openadapt-agent binary")
	flow := flag.String("flow", "", "fake openadapt-flow binary")
	bundles := flag.String("bundles", "", "bundles root")
	reports := flag.String("reports", "testdata/flow/reports", "fake Flow reports dir")
	starts := flag.Int("starts", 7, "timed warm starts")
	colds := flag.Int("cold", -1, "timed cold starts (default: as many as -starts)")
	lists := flag.Int("lists", 0, "list_workflows round trips (default arguments)")
	lower := flag.String("lowerbound", "", "bench/lowerbound binary: time `lowerbound -stat` over the same bundles before each warm start")
	reads := flag.Int("reads", 1000, "read round trips")
	runs := flag.Int("runs", 200, "run round trips")
	mode := flag.String("mode", "per-workflow", "read-only (no --allow-run), per-workflow or catalog")
	anchor := flag.String("anchor", "", "bench/sdkanchor binary: time its round trip beside serve's")
	flag.Parse()
	if *bin == "" || *flow == "" || *bundles == "" {
		fmt.Fprintln(os.Stderr, "servebench: -bin, -flow and -bundles are required")
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "servebench")
	check(err)
	defer os.RemoveAll(tmp)
	reportsAbs, _ := filepath.Abs(*reports)
	env := []string{
		"PATH=" + filepath.Dir(*flow) + ":" + os.Getenv("PATH"),
		"HOME=" + tmp,
		"XDG_CACHE_HOME=" + filepath.Join(tmp, "cache"),
		"XDG_STATE_HOME=" + filepath.Join(tmp, "state"),
		"OPENADAPT_FAKE_FLOW_REPORTS_DIR=" + reportsAbs,
		"OPENADAPT_FAKE_FLOW_REPORT=legacy-success",
	}
	runsDir := filepath.Join(tmp, "runs")
	args := []string{"serve", "--bundles", *bundles, "--runs-dir", runsDir, "--flow-cli", *flow, "--audit-log", "off"}
	switch *mode {
	case "read-only":
	case "per-workflow":
		args = append(args, "--allow-run")
	case "catalog":
		args = append(args, "--allow-run", "--tool-mode", "catalog")
	default:
		check(fmt.Errorf("unknown -mode %q", *mode))
	}
	if *colds < 0 {
		*colds = *starts
	}
	fmt.Printf("mode %s, %d warm and %d cold starts\n", *mode, *starts, *colds)
	// The verified-digest cache lives in the user cache folder, one file
	// per set of roots.
	cache := filepath.Join(tmp, "cache", "openadapt-agent")

	var cold, warm, coldCPU, warmCPU, lbWall, lbCPU []time.Duration
	var coldRSS, warmRSS []int
	if *colds == 0 && *starts > 0 {
		check(os.RemoveAll(cache))
		startOnce(*bin, args, env, nil) // writes the cache, untimed
	}
	for i := 0; i < max(*starts, *colds); i++ {
		if i < *colds {
			check(os.RemoveAll(cache))
			d, rss, _ := startOnce(*bin, args, env, nil)
			cold = append(cold, d)
			coldCPU = append(coldCPU, lastCPU)
			coldRSS = append(coldRSS, rss)
		}
		if i < *starts {
			if m, _ := filepath.Glob(filepath.Join(cache, "digest-cache*.json")); len(m) == 0 {
				check(fmt.Errorf("no digest cache in %s before a warm start", cache))
			}
			if *lower != "" {
				cmd := exec.Command(*lower, "-stat", *bundles)
				t0 := time.Now()
				check(cmd.Run())
				lbWall = append(lbWall, time.Since(t0))
				lbCPU = append(lbCPU, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			d, rss, _ := startOnce(*bin, args, env, nil)
			warm = append(warm, d)
			warmCPU = append(warmCPU, lastCPU)
			warmRSS = append(warmRSS, rss)
		}
	}
	if len(cold) > 0 {
		fmt.Printf("start→tools/list cold: median %v (min %v max %v), process CPU median %v, peak RSS median %d KiB (max %d KiB)\n", median(cold), slices.Min(cold), slices.Max(cold), median(coldCPU), medianInt(coldRSS), slices.Max(coldRSS))
	}
	if len(warm) > 0 {
		fmt.Printf("start→tools/list warm: median %v (min %v max %v), process CPU median %v, peak RSS median %d KiB (max %d KiB)\n", median(warm), slices.Min(warm), slices.Max(warm), median(warmCPU), medianInt(warmRSS), slices.Max(warmRSS))
	}
	if len(lbWall) > 0 {
		fmt.Printf("lower bound (lowerbound -stat, whole process, before each warm start): median %v (min %v max %v), process CPU median %v\n", median(lbWall), slices.Min(lbWall), slices.Max(lbWall), median(lbCPU))
	}
	// One machine-readable line for bench/serve-scale.sh (ms, KiB; 0 when
	// not measured).
	ms := func(d []time.Duration) float64 {
		if len(d) == 0 {
			return 0
		}
		return float64(median(d)) / 1e6
	}
	kib := func(v []int) int {
		if len(v) == 0 {
			return 0
		}
		return slices.Max(v)
	}
	listP50 := 0.0
	if *lists > 0 {
		listP50 = float64(listBench(*bin, args, env, *lists, *mode == "catalog")) / 1e6
	}
	fmt.Printf("RESULT mode=%s warm_ms=%.1f warm_cpu_ms=%.1f warm_rss_kib=%d cold_ms=%.1f cold_cpu_ms=%.1f cold_rss_kib=%d lb_ms=%.1f lb_cpu_ms=%.1f list_p50_ms=%.3f\n",
		*mode, ms(warm), ms(warmCPU), kib(warmRSS), ms(cold), ms(coldCPU), kib(coldRSS), ms(lbWall), ms(lbCPU), listP50)

	if *mode != "per-workflow" && *mode != "catalog" || *reads+*runs == 0 {
		return
	}
	var runTimes []time.Duration
	var sessionRSS int
	var wf, run string
	_, sessionRSS, _ = startOnce(*bin, args, env, func(c *client, tools []string) {
		for _, t := range tools {
			if strings.HasPrefix(t, "run_workflow_") && run == "" {
				run = t
				wf = strings.TrimPrefix(t, "run_")
			}
		}
		runArgs := func() string { return fmt.Sprintf(`{"name":%q,"arguments":{"note":"bench"}}`, run) }
		if *mode == "catalog" {
			res := c.call("tools/call", `{"name":"search_workflows","arguments":{"limit":1,"available_only":true}}`)
			i := strings.Index(res, `workflow_`)
			wf = res[i : i+len("workflow_")+24]
			run = "run_workflow"
			runArgs = func() string {
				return fmt.Sprintf(`{"name":"run_workflow","arguments":{"workflow_id":%q,"params":{"note":"bench"}}}`, wf)
			}
		}
		if run == "" {
			fmt.Fprintln(os.Stderr, "servebench: no run tool in", len(tools), "tools")
			os.Exit(1)
		}
		for i := 0; i < *runs; i++ {
			t0 := time.Now()
			res := c.call("tools/call", runArgs())
			runTimes = append(runTimes, time.Since(t0))
			if !strings.Contains(res, `\"status\": \"success\"`) && !strings.Contains(res, `"status":"success"`) {
				fmt.Fprintln(os.Stderr, "servebench: run did not succeed:", res[:min(len(res), 400)])
				os.Exit(1)
			}
		}
	})
	// The same fake Flow, executed directly with a run's argv shape.
	var direct []time.Duration
	for i := 0; i < *runs; i++ {
		rd := filepath.Join(tmp, "direct", strconv.Itoa(i))
		pf := filepath.Join(tmp, "params.json")
		os.WriteFile(pf, []byte(`{}`), 0o600)
		cmd := exec.Command(*flow, "run", *bundles, "--run-dir", rd, "--params-file", pf)
		cmd.Env = env
		t0 := time.Now()
		check(cmd.Run())
		direct = append(direct, time.Since(t0))
	}
	if *runs > 0 {
		fmt.Printf("run round trip: p50 %v p90 %v; direct fake Flow: p50 %v; overhead p50 %v over %d\n", median(runTimes), pct(runTimes, 90), median(direct), median(runTimes)-median(direct), len(runTimes))
		fmt.Printf("session peak RSS: %d KiB\n", sessionRSS)
	}
	if *reads > 0 {
		readBench(*bin, *anchor, args, env, tmp, wf, *reads)
	}
}

// listBench times list_workflows round trips (search_workflows in catalog
// mode, which has no list_workflows) with the default arguments (the first
// page where the tool pages) after 10 warm-up calls.
func listBench(bin string, args, env []string, n int, catalog bool) time.Duration {
	c, stop := session(bin, args, env)
	call, tool := `{"name":"list_workflows","arguments":{}}`, "list_workflows"
	if catalog { // the catalog's list is search_workflows
		call, tool = `{"name":"search_workflows","arguments":{}}`, "search_workflows"
	}
	reply := ""
	for range 10 {
		reply = c.call("tools/call", call)
	}
	times := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		c.call("tools/call", call)
		times = append(times, time.Since(t0))
	}
	rss := stop()
	errText := ""
	if strings.Contains(reply, `"isError":true`) || strings.Contains(reply, `"error":{`) {
		errText = " (an error result: " + reply[:min(len(reply), 300)] + ")"
	}
	fmt.Printf("%s (default arguments): p50 %v p90 %v over %d, reply %d bytes, session peak RSS %d KiB%s\n", tool, median(times), pct(times, 90), n, len(reply), rss, errText)
	return median(times)
}

// readBench times get_workflow round trips side by side, call by call in
// turn: the server with the audit log off, the
// server with the audit log on (its default when stateful), and the anchor
// (bench/sdkanchor, a bare go-sdk stdio server with one trivial tool) when
// given. Each server gets its own runs folder.
func readBench(bin, anchor string, args, env []string, tmp, wf string, reads int) {
	type side struct {
		name  string
		c     *client
		stop  func() int
		times []time.Duration
		reply int
	}
	withRuns := func(args []string, dir string) []string {
		out := slices.Clone(args)
		for i := range out {
			if out[i] == "--runs-dir" {
				out[i+1] = filepath.Join(tmp, dir)
			}
		}
		return out
	}
	auditOn := slices.DeleteFunc(withRuns(args, "runs-audit"), func(s string) bool { return s == "--audit-log" || s == "off" })
	sides := []*side{{name: "serve, audit off"}, {name: "serve, audit on"}}
	sides[0].c, sides[0].stop = session(bin, withRuns(args, "runs-read"), env)
	sides[1].c, sides[1].stop = session(bin, auditOn, env)
	if anchor != "" {
		a := &side{name: "anchor (bare go-sdk, one trivial tool)"}
		a.c, a.stop = session(anchor, nil, env)
		sides = append(sides, a)
	}
	call := fmt.Sprintf(`{"name":"get_workflow","arguments":{"workflow":%q}}`, wf)
	for _, s := range sides { // warm-up
		for range 20 {
			s.reply = len(s.c.call("tools/call", call))
		}
	}
	for range reads {
		for _, s := range sides {
			t0 := time.Now()
			s.c.call("tools/call", call)
			s.times = append(s.times, time.Since(t0))
		}
	}
	base := sides[len(sides)-1]
	for _, s := range sides {
		rss := s.stop()
		fmt.Printf("read round trip (get_workflow), %s: p50 %v p90 %v p99 %v over %d, reply %d bytes, peak RSS %d KiB", s.name, median(s.times), pct(s.times, 90), pct(s.times, 99), len(s.times), s.reply, rss)
		if anchor != "" && s != base {
			fmt.Printf(", p50 ratio to anchor %.2f×", float64(median(s.times))/float64(median(base.times)))
		}
		fmt.Println()
	}
}

// session starts a server and completes initialize; stop closes its stdin,
// waits for it and returns its peak RSS.
func session(bin string, args, env []string) (*client, func() int) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	check(err)
	stdout, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	check(cmd.Start())
	c := &client{in: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.call("tools/list", `{}`)
	return c, func() int {
		rss := peakRSS(cmd.Process.Pid)
		stdin.Close()
		check(cmd.Wait())
		return rss
	}
}

// lastCPU is the user+system CPU time of the last server startOnce ran
// (the whole process: start, tools/list, the session, exit).
var lastCPU time.Duration

type client struct {
	in  io.Writer
	out *bufio.Reader
	id  int
}

func (c *client) send(s string) {
	_, err := io.WriteString(c.in, s+"\n")
	check(err)
}

// call sends a request and returns its reply line, skipping notifications.
func (c *client) call(method, params string) string {
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params))
	want := fmt.Sprintf(`"id":%d,`, c.id)
	for {
		line, err := c.out.ReadString('\n')
		check(err)
		if strings.Contains(line, want) {
			return line
		}
	}
}

// startOnce starts the server, times start→tools/list reply, runs fn in the
// session when given, reads the peak RSS and closes stdin.
func startOnce(bin string, args, env []string, fn func(*client, []string)) (time.Duration, int, []string) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	check(err)
	stdout, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	t0 := time.Now()
	check(cmd.Start())
	c := &client{in: stdin, out: bufio.NewReaderSize(stdout, 1<<20)}
	c.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	reply := c.call("tools/list", `{}`)
	d := time.Since(t0)
	var res struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	check(json.Unmarshal([]byte(reply), &res))
	var names []string
	for _, t := range res.Result.Tools {
		names = append(names, t.Name)
	}
	if fn != nil {
		fn(c, names)
	}
	rss := peakRSS(cmd.Process.Pid)
	stdin.Close()
	check(cmd.Wait())
	lastCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return d, rss, names
}

func peakRSS(pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return -1
}

func median(d []time.Duration) time.Duration { return pct(d, 50) }

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)*p/100]
}

func medianInt(v []int) int {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}
