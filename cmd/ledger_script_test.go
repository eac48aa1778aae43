package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	lg "github.com/OpenAdaptAI/openadapt-agent/internal/testing/ledgergen"
)

// ledgerGenCmd implements the ledger-gen script command.
func ledgerGenCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: ledger-gen DIR [signature|expired|revoked]")
	}
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	raw, err := os.ReadFile(filepath.Join(ts.Getenv("TESTDATA"), "ledger", "snapshot", "public", "production-lifecycle.json"))
	ts.Check(err)
	var p struct {
		Targets []map[string]any `json:"targets"`
	}
	ts.Check(json.Unmarshal(raw, &p))
	static := map[string]map[string]any{}
	for _, t := range p.Targets {
		delete(t, "admission_history")
		delete(t, "latest_admission")
		static[t["id"].(string)] = t
	}
	o := lg.Options{
		Now:           now,
		StaticTargets: static,
		Workflows: []lg.WorkflowSpec{{
			BundleSHA256:  "sha256:1111111111111111111111111111111111111111111111111111111111111111",
			BundleVersion: "1.0.0", Issued: now.Add(-20 * 24 * time.Hour),
		}},
	}
	if len(args) == 2 {
		switch args[1] {
		case "signature":
			o.Hooks.Envelope = func(kind string, i int, e *lg.Envelope) {
				if kind == "qualification-release" && i == 0 {
					e.Sigs[0].Sig[0] ^= 1
				}
			}
		case "expired":
			o.Hooks.ReleasePre = func(s lg.ReleaseSpec, obj map[string]any) {
				if s.Target == "agent" {
					obj["expires_at"] = lg.TS(now.Add(-time.Hour))
				}
			}
		case "revoked":
			o.Hooks.R2 = func(r *lg.Root) []any {
				return []any{map[string]any{"subject_kind": "qualification-release",
					"subject_id": r.Releases[0].Entry["object_sha256"], "revoked_at": lg.TS(now.Add(-time.Hour)), "reason_code": "test"}}
			}
		default:
			ts.Fatalf("ledger-gen: unknown mutation %q", args[1])
		}
	}
	r := lg.Generate(o)
	ts.Check(r.Write(ts.MkAbs(args[0])))
	ts.Setenv("LEDGER_PIN", r.SignerIdentity)
}

// sigstoreSignCmd implements the sigstore-sign script command.
func sigstoreSignCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sigstore-sign FILE DIR")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	dir := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dir, 0o755))
	_, _, err = lg.VirtualSigstoreFiles(data, dir,
		"https://github.com/example/ledger-publisher/.github/workflows/sign.yml@refs/heads/main",
		"https://token.actions.githubusercontent.com")
	ts.Check(err)
}
