package tutorial

import (
	"context"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowhelper"
)

// FromHelper adapts the Flow-side helper to [Helper].
func FromHelper(h *flowhelper.Helper) Helper { return flowHelper{h} }

type flowHelper struct{ h *flowhelper.Helper }

func (f flowHelper) Alive() bool { return f.h.Alive() }

func (f flowHelper) PrepareTutorial(ctx context.Context, req Request, progress func(string)) (Result, error) {
	var policy *string
	if req.Policy != "" {
		p := req.Policy
		policy = &p
	}
	r, err := f.h.PrepareTutorial(ctx, flowhelper.TutorialRequest{WorkDir: req.WorkDir, Headed: req.Headed,
		Reuse: req.Reuse, Instance: req.Instance, Policy: policy}, func(p flowhelper.TutorialProgress) { progress(p.Phase) })
	if err != nil {
		return Result{}, err
	}
	return Result{BundleDir: r.BundleDir, BaseURL: r.BaseURL, URL: r.URL, DeploymentConfig: r.DeploymentConfig,
		ContentDigest: r.ContentDigest, Reused: r.Reused}, nil
}
