package flowhelper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/lazyre"
)

// TutorialRequest is tutorial.prepare's request (flow-helper.md §3.3), with
// two fields the §12 decisions need: Instance names the per-instance
// deployment-<instance>.yaml (§12.14) and Policy carries --policy into it.
type TutorialRequest struct {
	WorkDir  string  `json:"work_dir"` // absolute: <runs-dir>/synthetic-tutorial
	Headed   bool    `json:"headed"`
	Reuse    bool    `json:"reuse"`
	Instance string  `json:"instance"` // the owner id, 16 lowercase hex
	Policy   *string `json:"policy"`   // nil = Flow's TUTORIAL_POLICY (clinical-write)
}

// TutorialProgress is one progress frame (§12.13), sent as a phase starts.
type TutorialProgress struct {
	Phase   string
	Elapsed time.Duration
}

// TutorialResult is tutorial.prepare's answer. ContentDigest (an addition
// to §3.3's result) is the manifest digest Flow's integrity-checked load
// accepted; callers compare it with their own verification of BundleDir.
type TutorialResult struct {
	BundleDir        string
	BaseURL          string
	URL              string
	DeploymentConfig string
	ContentDigest    string
	Reused           bool
}

// TutorialPhases is the closed phase vocabulary of tutorial.prepare's
// progress frames, in order; a failure is reported at the last one seen.
var TutorialPhases = []string{"lock", "mockmed", "verify", "replace", "record", "compile", "certify", "deployment"}

var tutorialInstanceRE = lazyre.New(`^[0-9a-f]{16}$`)

// PrepareTutorial sends tutorial.prepare (once per helper). progress, when
// not nil, is called for each progress frame, in order, on the helper's
// reader goroutine, before PrepareTutorial returns. A progress frame outside
// the schema (unknown phase, negative or fractional elapsed_ms, extra key)
// or a result outside its closed schema kills the helper. Errors: [*Error]
// (internal/tutorial_failed: details only in the protected log;
// unavailable/flow_*; invalid/bad_request) or a [*TransportError].
func (h *Helper) PrepareTutorial(ctx context.Context, req TutorialRequest, progress func(TutorialProgress)) (TutorialResult, error) {
	if !tutorialInstanceRE().MatchString(req.Instance) {
		return TutorialResult{}, errors.New("flow helper tutorial.prepare: the instance must be 16 lowercase hex")
	}
	var (
		mu   sync.Mutex
		perr error
	)
	known := map[string]bool{}
	for _, p := range TutorialPhases {
		known[p] = true
	}
	raw, err := h.call(ctx, "tutorial.prepare", req, h.to.Tutorial, func(p json.RawMessage) {
		var f struct {
			Phase   *string  `json:"phase"`
			Elapsed *float64 `json:"elapsed_ms"`
		}
		err := decodeClosed(p, &f, "phase", "elapsed_ms")
		if err == nil && (f.Phase == nil || f.Elapsed == nil || !known[*f.Phase] ||
			*f.Elapsed < 0 || *f.Elapsed != math.Trunc(*f.Elapsed) || *f.Elapsed > 1e12) {
			err = errors.New("bad phase or elapsed_ms")
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if perr == nil {
				perr = fmt.Errorf("progress frame: %w", err)
			}
			return
		}
		if perr == nil && progress != nil {
			progress(TutorialProgress{Phase: *f.Phase, Elapsed: time.Duration(*f.Elapsed) * time.Millisecond})
		}
	})
	mu.Lock()
	bad := perr
	mu.Unlock()
	if bad != nil {
		return TutorialResult{}, h.badResult("tutorial.prepare", bad)
	}
	if err != nil {
		return TutorialResult{}, err
	}
	var r struct {
		BundleDir        *string `json:"bundle_dir"`
		BaseURL          *string `json:"base_url"`
		URL              *string `json:"url"`
		DeploymentConfig *string `json:"deployment_config"`
		ContentDigest    *string `json:"content_digest"`
		Reused           *bool   `json:"reused"`
	}
	if err := decodeClosed(raw, &r, "bundle_dir", "base_url", "url", "deployment_config", "content_digest", "reused"); err != nil ||
		r.BundleDir == nil || r.BaseURL == nil || r.URL == nil || r.DeploymentConfig == nil || r.ContentDigest == nil || r.Reused == nil {
		if err == nil {
			err = errors.New("null field")
		}
		return TutorialResult{}, h.badResult("tutorial.prepare", err)
	}
	return TutorialResult{BundleDir: *r.BundleDir, BaseURL: *r.BaseURL, URL: *r.URL,
		DeploymentConfig: *r.DeploymentConfig, ContentDigest: *r.ContentDigest, Reused: *r.Reused}, nil
}
