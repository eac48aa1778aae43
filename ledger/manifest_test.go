package ledger

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type manifestRun struct {
	Title    string          `json:"title"`
	Argv     []string        `json:"argv"`
	Expected json.RawMessage `json:"expected"`
}

// runArgv interprets a MANIFEST argv against the library, from dir.
func runArgv(t *testing.T, dir string, argv []string) *Result {
	t.Helper()
	var (
		opts    []Option
		path    string
		q       GateQuery
		isGate  = argv[1] == "admission"
		ledger  string
		at      time.Time
		atGiven bool
	)
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		next := func() string { i++; return argv[i] }
		switch a {
		case "--json":
		case "--strict":
			opts = append(opts, WithStrict())
		case "--at":
			var err error
			at, err = time.Parse(time.RFC3339, next())
			if err != nil {
				t.Fatal(err)
			}
			atGiven = true
		case "--evidence-root":
			opts = append(opts, WithEvidenceRoot(filepath.Join(dir, next())))
		case "--bundle-version":
			q.BundleVersion = next()
		case "--bundle-sha256":
			q.BundleSHA256 = next()
		case "--profile":
			q.Profile = next()
		case "--ledger":
			ledger = next()
		default:
			path = a
		}
	}
	if atGiven {
		opts = append(opts, WithAt(at))
	}
	v, err := NewVerifier(DefaultTrust(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if isGate {
		res, err := v.Admission(context.Background(), Path(filepath.Join(dir, ledger)), q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res, err := v.Verify(context.Background(), Path(filepath.Join(dir, path)))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// project renders a result in the MANIFEST's compact tuple form.
func project(res *Result, want map[string]json.RawMessage) map[string]any {
	out := map[string]any{"exit_code": res.ExitCode, "integrity": res.Integrity}
	if _, ok := want["targets"]; ok {
		ts := map[string]any{}
		for _, tr := range res.Targets {
			tuple := []any{tr.Verdict, nullable(tr.Reason), nullable(tr.Detail)}
			if tr.Sequence != nil {
				tuple = append(tuple, float64(*tr.Sequence))
			}
			ts[tr.Target] = tuple
		}
		out["targets"] = ts
	}
	if _, ok := want["product"]; ok {
		if res.Product != nil {
			out["product"] = res.Product.Verdict
		} else {
			out["product"] = nil
		}
	}
	if _, ok := want["workflow_admissions"]; ok {
		ws := []any{}
		for _, w := range res.WorkflowAdmissions {
			ws = append(ws, []any{nullable(w.ObjectSHA256), w.Verdict, nullable(w.Reason), nullable(w.Detail)})
		}
		out["workflow_admissions"] = ws
	}
	if _, ok := want["admission"]; ok && res.Admission != nil {
		a := res.Admission
		out["admission"] = []any{a.Decision, nullable(a.Reason), nullable(a.Detail)}
	}
	return out
}

func nullable(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// TestManifestExpectedRuns reproduces every expected_run of the public
// ledger vectors (testdata/ledger/MANIFEST.json).
func TestManifestExpectedRuns(t *testing.T) {
	dir := filepath.Join("..", "testdata", "ledger")
	raw, err := os.ReadFile(filepath.Join(dir, "MANIFEST.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		ExpectedRuns []manifestRun `json:"expected_runs"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.ExpectedRuns) < 10 {
		t.Fatalf("only %d expected runs", len(m.ExpectedRuns))
	}
	for _, run := range m.ExpectedRuns {
		t.Run(run.Title, func(t *testing.T) {
			var want map[string]json.RawMessage
			if err := json.Unmarshal(run.Expected, &want); err != nil {
				t.Fatal(err)
			}
			var wantAny map[string]any
			_ = json.Unmarshal(run.Expected, &wantAny)
			res := runArgv(t, dir, run.Argv)
			got := project(res, want)
			gotJSON, _ := json.Marshal(got)
			var gotAny map[string]any
			_ = json.Unmarshal(gotJSON, &gotAny)
			if diff := cmp.Diff(wantAny, gotAny); diff != "" {
				t.Errorf("%v (-want +got):\n%s", run.Argv, diff)
			}
		})
	}
}
