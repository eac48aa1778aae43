//go:build unix

package flowhelper_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
	"github.com/OpenAdaptAI/openadapt-agent/internal/testing/fakehelper"
)

const tutInstance = "0123456789abcdef"

func tutorialFake(t *testing.T, rules ...fakehelper.Rule) (*fakeEnv, string) {
	t.Helper()
	f := newFake(t, "", rules...)
	src, err := filepath.Abs(filepath.Join("..", "..", "..", "testdata", "tutorial", "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	f.env = append(f.env, "OPENADAPT_FAKE_HELPER_TUTORIAL_BUNDLE="+src)
	work := filepath.Join(f.runs, "synthetic-tutorial")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	return f, work
}

func TestPrepareTutorialFake(t *testing.T) {
	t.Parallel()
	f, work := tutorialFake(t)
	h := f.start(t)
	var phases []string
	res, err := h.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Reuse: true, Instance: tutInstance},
		func(p flowhelper.TutorialProgress) { phases = append(phases, p.Phase) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"lock", "mockmed", "verify", "replace", "record", "compile", "certify", "deployment"}
	if !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if res.BundleDir != filepath.Join(work, "bundle") || res.Reused || res.ContentDigest == "" ||
		res.DeploymentConfig != filepath.Join(work, "deployment-"+tutInstance+".yaml") {
		t.Errorf("result %+v", res)
	}
	reqs := fakehelper.Requests(t, f.record)
	last := reqs[len(reqs)-1]
	if last["op"] != "tutorial.prepare" || last["policy"] != nil || last["instance"] != tutInstance || last["work_dir"] != work {
		t.Errorf("request %v", last)
	}
	cr, err := h.Close()
	if err != nil || !cr.MockmedStopped {
		t.Errorf("close %+v %v: MockMed must be reported stopped", cr, err)
	}
	// A second helper reuses what the first prepared.
	h2 := f.start(t)
	phases = nil
	res, err = h2.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Reuse: true, Instance: tutInstance},
		func(p flowhelper.TutorialProgress) { phases = append(phases, p.Phase) })
	if err != nil || !res.Reused || !slices.Equal(phases, []string{"lock", "mockmed", "verify", "deployment"}) {
		t.Errorf("reuse: %+v %v %v", res, phases, err)
	}
}

func TestPrepareTutorialErrors(t *testing.T) {
	t.Parallel()
	t.Run("tutorial_failed", func(t *testing.T) {
		f, work := tutorialFake(t, fakehelper.Rule{Op: "tutorial.prepare", Progress: []string{"lock", "record"},
			Error: fakehelper.ErrorFrame("internal", "tutorial_failed", false, "openadapt_flow.tutorial.TutorialError")})
		h := f.start(t)
		var last string
		_, err := h.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Instance: tutInstance},
			func(p flowhelper.TutorialProgress) { last = p.Phase })
		var he *flowhelper.Error
		if !errors.As(err, &he) || he.Reason != "tutorial_failed" || last != "record" || !h.Alive() {
			t.Fatalf("err %v last %q alive %v", err, last, h.Alive())
		}
	})
	for name, rule := range map[string]fakehelper.Rule{
		"unknown phase":    {Op: "tutorial.prepare", Progress: []string{"surprise"}, Reply: json.RawMessage(`{}`)},
		"result schema":    {Op: "tutorial.prepare", Reply: json.RawMessage(`{"bundle_dir":"/x"}`)},
		"extra key":        {Op: "tutorial.prepare", Reply: json.RawMessage(`{"bundle_dir":"/x","base_url":"u","url":"u","deployment_config":"d","content_digest":"c","reused":false,"mockmed_pid":1}`)},
		"crash mid-record": {Op: "tutorial.prepare", Progress: []string{"lock", "record"}, Then: "crash"},
	} {
		t.Run(name, func(t *testing.T) {
			f, work := tutorialFake(t, rule)
			h := f.start(t)
			_, err := h.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Instance: tutInstance}, nil)
			if !errors.Is(err, flowhelper.ErrDead) {
				t.Fatalf("err %v, want a dead helper", err)
			}
			<-h.Done()
		})
	}
	t.Run("bad instance", func(t *testing.T) {
		f, work := tutorialFake(t)
		h := f.start(t)
		if _, err := h.PrepareTutorial(context.Background(), flowhelper.TutorialRequest{WorkDir: work, Instance: "../x"}, nil); err == nil {
			t.Fatal("bad instance sent")
		}
	})
}
