package flowhelper

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/lazyre"
	"github.com/OpenAdaptAI/openadapt-agent/internal/util/pyjson"
)

// TutorialRequest is tutorial.prepare's request (docs/helper.md, "Ops"):
// Instance names the per-instance deployment-<instance>.yaml and Policy
// carries --policy into it.
type TutorialRequest struct {
	WorkDir  string  `json:"work_dir"` // absolute: <runs-dir>/synthetic-tutorial
	Headed   bool    `json:"headed"`
	Reuse    bool    `json:"reuse"`
	Instance string  `json:"instance"` // the owner id, 16 lowercase hex
	Policy   *string `json:"policy"`   // nil = Flow's TUTORIAL_POLICY (clinical-write)
}

// TutorialProgress is one progress frame, sent as a phase starts.
type TutorialProgress struct {
	Phase   string
	Elapsed time.Duration
}

// TutorialResult is tutorial.prepare's answer. ContentDigest (an addition
// to the op's first result shape) is the manifest digest Flow's integrity-checked load
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
	res, err := h.call(ctx, "tutorial.prepare", req, h.to.Tutorial, func(p object) {
		phase, elapsed, err := progressFrame(p, known)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if perr == nil {
				perr = fmt.Errorf("progress frame: %w", err)
			}
			return
		}
		if perr == nil && progress != nil {
			progress(TutorialProgress{Phase: phase, Elapsed: time.Duration(elapsed) * time.Millisecond})
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
	if err := closedResult(res, "bundle_dir", "base_url", "url", "deployment_config", "content_digest", "reused"); err != nil {
		return TutorialResult{}, h.badResult("tutorial.prepare", err)
	}
	var tr TutorialResult
	for _, f := range []struct {
		k   string
		dst *string
	}{{"bundle_dir", &tr.BundleDir}, {"base_url", &tr.BaseURL}, {"url", &tr.URL},
		{"deployment_config", &tr.DeploymentConfig}, {"content_digest", &tr.ContentDigest}} {
		var ok bool
		if *f.dst, ok = res.str(f.k); !ok {
			return TutorialResult{}, h.badResult("tutorial.prepare", &fieldError{f.k})
		}
	}
	var ok bool
	if tr.Reused, ok = res.boolean("reused"); !ok {
		return TutorialResult{}, h.badResult("tutorial.prepare", &fieldError{"reused"})
	}
	return tr, nil
}

// progressFrame checks one tutorial.prepare progress object:
// exactly a known phase and a whole, non-negative elapsed_ms ≤ 1e12.
func progressFrame(p object, known map[string]bool) (string, float64, error) {
	if !p.closed("phase", "elapsed_ms") {
		return "", 0, errClosed
	}
	phase, ok := p.str("phase")
	v := p.get("elapsed_ms")
	if !ok || !known[phase] || p.d.Kind(v) != pyjson.Number {
		return "", 0, errors.New("bad phase or elapsed_ms")
	}
	ms, err := strconv.ParseFloat(string(p.d.Raw(v)), 64)
	if err != nil || ms < 0 || ms != math.Trunc(ms) || ms > 1e12 {
		return "", 0, errors.New("bad phase or elapsed_ms")
	}
	return phase, ms, nil
}
