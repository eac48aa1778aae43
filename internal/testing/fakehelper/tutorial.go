//go:build unix

package fakehelper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// tutorialState is the fake's tutorial.prepare: it "prepares" by copying the
// bundle named by OPENADAPT_FAKE_HELPER_TUTORIAL_BUNDLE (a real Flow-made
// tutorial bundle in tests) into <work_dir>/bundle, keeps prepared.json like
// the real program, writes deployment-<instance>.yaml, and reports a MockMed
// base URL on the discard port (nothing listens: the fake Flow never
// connects). close then answers mockmed_stopped:true. Knobs:
//
//   - OPENADAPT_FAKE_HELPER_TUTORIAL_BUNDLE: the source bundle (required);
//   - OPENADAPT_FAKE_HELPER_TUTORIAL_DIGEST: the content_digest to answer
//     (default: the copied manifest's), to test a lying helper.
type tutorialState struct {
	mu      sync.Mutex
	started bool
	up      bool
}

func (f *fake) mockmedUp() bool {
	f.tutorial.mu.Lock()
	defer f.tutorial.mu.Unlock()
	return f.tutorial.up
}

func (f *fake) progress(id any, phase string) {
	f.writeFrame(map[string]any{"id": id, "progress": map[string]any{"phase": phase, "elapsed_ms": 0}})
}

const fakeBaseURL = "http://127.0.0.1:9/"

func (f *fake) tutorialPrepare(req map[string]any) (any, map[string]any) {
	id := req["id"]
	work, _ := req["work_dir"].(string)
	instance, _ := req["instance"].(string)
	reuse, _ := req["reuse"].(bool)
	f.tutorial.mu.Lock()
	if f.tutorial.started {
		f.tutorial.mu.Unlock()
		return nil, errObj("invalid", "bad_request", false)
	}
	f.tutorial.started = true
	f.tutorial.mu.Unlock()
	internal := func(err error) (any, map[string]any) {
		fmt.Fprintln(os.Stderr, "fakehelper: tutorial.prepare:", err)
		return nil, errObj("internal", "tutorial_failed", false)
	}
	f.progress(id, "lock")
	if st, err := os.Lstat(work); err != nil || !st.IsDir() {
		return internal(errors.New("work_dir is not a directory"))
	}
	f.progress(id, "mockmed")
	f.tutorial.mu.Lock()
	f.tutorial.up = true
	f.tutorial.mu.Unlock()
	bundle := filepath.Join(work, "bundle")
	prepared := filepath.Join(work, "prepared.json")
	reused := false
	if reuse {
		f.progress(id, "verify")
		if _, err := os.Stat(prepared); err == nil {
			reused = true
		}
	}
	if !reused {
		f.progress(id, "replace")
		_ = os.Remove(prepared)
		if err := os.RemoveAll(bundle); err != nil {
			return internal(err)
		}
		for _, p := range []string{"record", "compile", "certify"} {
			f.progress(id, p)
		}
		src := os.Getenv("OPENADAPT_FAKE_HELPER_TUTORIAL_BUNDLE")
		if err := os.CopyFS(bundle, os.DirFS(src)); err != nil {
			return internal(err)
		}
		if err := os.WriteFile(prepared, []byte(`{"fake":true}`+"\n"), 0o600); err != nil {
			return internal(err)
		}
	}
	var man struct {
		ContentDigest string `json:"content_digest"`
	}
	raw, err := os.ReadFile(filepath.Join(bundle, "manifest.json"))
	if err != nil || json.Unmarshal(raw, &man) != nil {
		return internal(errors.New("no manifest"))
	}
	if d := os.Getenv("OPENADAPT_FAKE_HELPER_TUTORIAL_DIGEST"); d != "" {
		man.ContentDigest = d
	}
	f.progress(id, "deployment")
	url := fakeBaseURL + "?fault=ok&idempotency=demo#tasks"
	dep := filepath.Join(work, "deployment-"+instance+".yaml")
	cfg := fmt.Sprintf(`{"name":"synthetic-tutorial","backend":{"kind":"web","url":%q,"headed":%v},"effects":{"kind":"rest","base_url":%q},"runtime":{"profile":"standard","durable":true,"allow_model_grounding":false},"policy":{"policy":"clinical-write"}}`+"\n",
		url, req["headed"] == true, fakeBaseURL)
	if err := os.WriteFile(dep, []byte(cfg), 0o600); err != nil {
		return internal(err)
	}
	return map[string]any{"bundle_dir": bundle, "base_url": fakeBaseURL, "url": url,
		"deployment_config": dep, "content_digest": man.ContentDigest, "reused": reused}, nil
}
