package serve

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDigestCache(t *testing.T) {
	e := newEnv(t)
	dir := e.demo("demo", testBundle{salt: "c1"})
	e.demo("other", testBundle{salt: "c2"})
	o := e.opts()
	o.AllowRun = true
	s1 := start(t, o)
	ids1 := toolNames(s1)
	cache := filepath.Join(e.runsDir, ".openadapt-agent", cacheName)
	fi, err := os.Stat(cache)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cache %v %v", fi, err)
	}
	// A warm start serves the same listing.
	s2 := start(t, o)
	if got := toolNames(s2); len(got) != len(ids1) {
		t.Fatalf("warm tools %v vs %v", got, ids1)
	}
	// Any change to a bundle's files is a miss: a tampered bundle becomes
	// unavailable at the next start.
	time.Sleep(10 * time.Millisecond)
	writeBundle(t, dir, testBundle{name: "Demo Triage", params: map[string]string{"note": "x"}, intents: []string{"a"}, salt: "c1", tamper: true})
	s3 := start(t, o)
	if got := toolNames(s3); len(got) != len(ids1)-1 {
		t.Fatalf("after tamper: %v", got)
	}
	// A run never trusts the cache: it re-verifies the bundle in full.
	s4 := start(t, o)
	var w *workflow
	for _, x := range s4.srv.cat.workflows {
		if x.available {
			w = x
		}
	}
	{
		writeBundle(t, w.dir, testBundle{name: "Demo Triage", params: map[string]string{"note": "x"}, intents: []string{"a"}, salt: "zz"})
		if r := s4.call("run_"+w.id, map[string]any{"note": "a"}); errorCode(r) != "workflow_unavailable" {
			t.Fatalf("changed bundle ran: %v", r)
		}
	}
}
