package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/OpenAdaptAI/openadapt-agent/internal/flow/flowrun"
	"github.com/OpenAdaptAI/openadapt-agent/ledger"
	"github.com/OpenAdaptAI/openadapt-agent/skill"
)

// jsonFailurePaths holds, for every command with a --json flag, arguments
// that make it exit 1. TestJSONEveryCommand fails when a command with --json
// is missing here, so a new command cannot skip the promise.
func jsonFailurePaths(tmp string) map[string][]string {
	zero := "sha256:" + strings.Repeat("0", 64)
	os.MkdirAll(filepath.Join(tmp, ".agents", ".skill-lock.json"), 0o755) // skill list -g refuses it
	return map[string][]string{
		"bundle verify":    {"../testdata/flow/tampered/workflow-edited", filepath.Join(tmp, "nope")},
		"bundle inspect":   {filepath.Join(tmp, "nope")},
		"ledger verify":    {filepath.Join(tmp, "nope.json")},
		"ledger admission": {"--bundle-sha256", zero},
		"skill validate":   {filepath.Join(tmp, "nope")},
		"skill pack":       {filepath.Join(tmp, "nope"), "-o", filepath.Join(tmp, "x.skill")},
		"skill emit":       {"--from-flow-skill", filepath.Join(tmp, "nope"), "--out", filepath.Join(tmp, "out")},
		"emit-skill":       {"--from-flow-skill", filepath.Join(tmp, "nope"), "--out", filepath.Join(tmp, "out")},
		"skill verify":     {filepath.Join(tmp, "nope.skill")},
		"skill install":    {filepath.Join(tmp, "nope"), "--agent", "codex", "--global"},
		"skill list":       {"-g"}, // the global lock path is a folder (made below)
		"skill remove":     {"nope", "-g", "-y"},
		"doctor":           {"--bundles", filepath.Join(tmp, "nope")},
		"attention list":   {"--runs-dir", filepath.Join(tmp, "nope")},
		"runs list":        {"--runs-dir", filepath.Join(tmp, "nope")},
		"runs show":        {"run-" + strings.Repeat("0", 24), "--runs-dir", filepath.Join(tmp, "nope")},
		"release verify":   {filepath.Join(tmp, "nope.txt"), "--bundle", filepath.Join(tmp, "nope.json"), "--key", filepath.Join(tmp, "nope.pub"), "--insecure-ignore-tlog"},
	}
}

// jsonNoFailurePath lists commands with --json that cannot exit 1 (only a
// write error to stdout could fail them, and then no document can be read).
var jsonNoFailurePath = map[string]bool{"version": true}

// TestJSONEveryCommand runs every command's failure path with --json: exit 1
// and exactly one JSON document with a mediaType on stdout; and a usage error
// with --json: exit 2 and nothing on stdout.
func TestJSONEveryCommand(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", tmp)
	t.Setenv("XDG_CONFIG_HOME", tmp)
	t.Setenv("CODEX_HOME", filepath.Join(tmp, ".codex"))
	t.Setenv("OPENADAPT_BUNDLE_KEY", "")
	paths := jsonFailurePaths(tmp)
	root := newRootCmd(&IO{In: eofReader{}, Out: io.Discard, Err: io.Discard})
	var withJSON []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("json") != nil {
			withJSON = append(withJSON, commandName(c))
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if len(withJSON) < len(paths) {
		t.Fatalf("found %d commands with --json (%v), want at least %d", len(withJSON), withJSON, len(paths))
	}
	for _, name := range withJSON {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			if jsonNoFailurePath[name] {
				t.Skipf("%s has no failure path", name)
			}
			args, ok := paths[name]
			if !ok {
				t.Fatalf("%s has --json but no failure path in jsonFailurePaths", name)
			}
			argv := append(append(strings.Fields(name), "--json"), args...)
			var out, errb bytes.Buffer
			code := Run(context.Background(), argv, nil, &out, &errb)
			if code != exitFailed {
				t.Fatalf("%v: exit %d, want 1; stderr:\n%s", argv, code, errb.String())
			}
			doc := decodeOne(t, out.Bytes())
			mt, _ := doc["mediaType"].(string)
			if !strings.HasPrefix(mt, "application/vnd.openadapt-agent.") {
				t.Fatalf("mediaType = %q", mt)
			}
			if mt == failureMediaType {
				e, _ := doc["error"].(map[string]any)
				code, _ := e["code"].(string)
				if failureMessages[code] == "" || e["message"] != failureMessages[code] || doc["command"] != name {
					t.Fatalf("failure document = %s", out.String())
				}
				// The document never echoes the operand (stderr does).
				if strings.Contains(out.String(), tmp) {
					t.Fatalf("failure document names a path: %s", out.String())
				}
			}

			out.Reset()
			errb.Reset()
			argv = append(strings.Fields(name), "--json", "--no-such-flag")
			if code := Run(context.Background(), argv, nil, &out, &errb); code != exitUsage {
				t.Fatalf("%v: exit %d, want 2", argv, code)
			}
			if out.Len() != 0 {
				t.Fatalf("%v: usage error printed %q on stdout, want nothing", argv, out.String())
			}
		})
	}
}

// decodeOne requires b to be exactly one JSON object.
func decodeOne(t *testing.T, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, b)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("stdout holds more than one JSON document:\n%s", b)
	}
	return doc
}

func TestFailureCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("x"), codeFailed},
		{errCheckFailed, codeCheckFailed},
		{fmt.Errorf("a: %w", context.Canceled), codeInterrupted},
		{fmt.Errorf("a: %w", skill.ErrDigestMismatch), codeDigestMismatch},
		{fmt.Errorf("a: %w", skill.ErrUnknownArchive), codeUnsafeArchive},
		{fmt.Errorf("a: %w", skill.ErrName), codeInvalidSkill},
		{fmt.Errorf("a: %w", skill.ErrConflict), codeConflict},
		{fmt.Errorf("a: %w", skill.ErrNotInstalled), codeNotInstalled},
		{fmt.Errorf("a: %w", skill.ErrNotConfirmed), codeNotConfirmed},
		{fmt.Errorf("a: %w", skill.ErrUnsafePath), codeUnsafePath},
		{fmt.Errorf("a: %w", skill.ErrBundle), codeBundleRefused},
		{fmt.Errorf("a: %w", skill.ErrPath), codeOperandUnreadable},
		{fmt.Errorf("a: %w", flowrun.ErrFlowNotFound), codeFlowNotFound},
		{fmt.Errorf("a: %w", skill.ErrFlow), codeFlowFailed},
		{fmt.Errorf("a: %w", ledger.ErrSigstoreVerification), codeSignatureInvalid},
		{fmt.Errorf("a: %w", ledger.ErrNoDocuments), codeInputInvalid},
		{withCode(codeOperandMissing, skill.ErrPath), codeOperandMissing},
	} {
		if got := failureCode(tc.err); got != tc.want {
			t.Errorf("failureCode(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if failureMessages[tc.want] == "" {
			t.Errorf("code %q has no fixed message", tc.want)
		}
	}
}

// TestOperandError covers the operand classification on its own.
func TestOperandError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := writeFileForTest(file); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path              string
		wantDir, wantFile bool
		code              string
	}{
		{filepath.Join(dir, "missing"), true, true, codeOperandMissing},
		{file, true, false, codeOperandNotRegular},
		{dir, false, true, codeOperandNotRegular},
		{file, false, true, ""},
		{dir, true, false, ""},
		{dir, true, true, ""},
	} {
		err := operandError(tc.path, tc.wantDir, tc.wantFile)
		got := ""
		if err != nil {
			got = failureCode(err)
			if exitCode(err) != exitFailed {
				t.Errorf("operandError(%s) exits %d, want 1", tc.path, exitCode(err))
			}
		}
		if got != tc.code {
			t.Errorf("operandError(%s, %v, %v) = %q, want %q", tc.path, tc.wantDir, tc.wantFile, got, tc.code)
		}
	}
}

func writeFileForTest(p string) error { return os.WriteFile(p, []byte("x"), 0o644) }
