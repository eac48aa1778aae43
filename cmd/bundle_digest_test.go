package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDigestFieldSpelling sweeps the JSON documents of the bundle and ledger
// commands: every field this project names *sha256
// (bundle_sha256, sha256, object_sha256, …) is "sha256:<64 hex>", and
// content_digest keeps Flow's bare 64 hex, as Flow prints it.
func TestDigestFieldSpelling(t *testing.T) {
	vec := filepath.Join("..", "testdata", "flow")
	prefixed := regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	bare := regexp.MustCompile(`^[0-9a-f]{64}$`)
	seen := map[string]int{}
	var walk func(t *testing.T, v any, key string)
	walk = func(t *testing.T, v any, key string) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				walk(t, c, k)
			}
		case []any:
			for _, c := range x {
				walk(t, c, key)
			}
		case string:
			switch {
			case key == "content_digest":
				seen[key]++
				if !bare.MatchString(x) {
					t.Errorf("content_digest %q is not Flow's bare hex", x)
				}
			case strings.HasSuffix(key, "sha256"):
				seen[key]++
				if !prefixed.MatchString(x) {
					t.Errorf("%s %q lacks the sha256: prefix", key, x)
				}
			}
		}
	}
	for _, args := range [][]string{
		{"bundle", "verify", "--json", filepath.Join(vec, "plain")},
		{"bundle", "inspect", "--json", filepath.Join(vec, "plain")},
		{"ledger", "verify", "--json"},
		{"ledger", "admission", "--json", "--bundle", filepath.Join(vec, "plain", "mockmed-triage-v3")},
	} {
		var out, errb bytes.Buffer
		Run(context.Background(), args, nil, &out, &errb)
		var doc any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out.String())
		}
		walk(t, doc, "")
	}
	for _, k := range []string{"content_digest", "bundle_sha256"} {
		if seen[k] == 0 {
			t.Errorf("no %s field seen: the sweep checks nothing", k)
		}
	}
}

// TestBundlePathsKeepLeadingSlash: an absolute operand is echoed whole, in
// the text line, the JSON path and the error of a command that refuses it.
func TestBundlePathsKeepLeadingSlash(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "missing-bundle")
	for _, args := range [][]string{
		{"bundle", "verify", abs},
		{"bundle", "verify", "--json", abs},
		{"bundle", "inspect", abs},
		{"ledger", "admission", "--bundle", abs},
	} {
		var out, errb bytes.Buffer
		Run(context.Background(), args, nil, &out, &errb)
		all := out.String() + errb.String()
		if !strings.Contains(all, abs) {
			t.Errorf("%v does not name %s whole:\n%s", args, abs, all)
		}
		if strings.Contains(all, "<asset>") || strings.Contains(all, "<root>") {
			t.Errorf("%v prints a path placeholder:\n%s", args, all)
		}
	}
}
