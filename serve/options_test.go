package serve

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestEffectiveProfile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "deploy.yaml")
	os.WriteFile(cfg, []byte("runtime:\n  profile: standard\n"), 0o600)
	for _, c := range []struct {
		extra  []string
		config string
		want   string
		err    string
	}{
		{nil, "", ProfileNone, ""},
		{nil, cfg, ProfileStandard, ""},
		{[]string{"--profile=regulated"}, cfg, ProfileRegulated, ""},
		{[]string{"--profile", "demo", "--profile=standard"}, "", ProfileStandard, ""},
		{[]string{"--profile=standard", "--profile", "demo"}, "", ProfileDemo, ""},
		{[]string{"--backend", "web"}, "", ProfileNone, ""},
		{[]string{"--profile=prod"}, "", "", "unsupported execution profile; use demo, standard, or regulated"},
		{[]string{"--profile="}, "", "", "unsupported execution profile; use demo, standard, or regulated"},
		{[]string{"--profile"}, "", "", "unsupported execution profile; use demo, standard, or regulated"},
		{[]string{"--prof=standard"}, "", "", "--extra-run-arg must spell --profile in full"},
		{[]string{"--pro"}, "", "", "--extra-run-arg must spell --profile in full"},
		{[]string{"--p", "standard"}, "", "", "--extra-run-arg must spell --profile in full"},
		{nil, filepath.Join(dir, "missing.yaml"), "", "the deployment config could not be read: " + filepath.Join(dir, "missing.yaml")},
	} {
		got, err := effectiveProfile(c.extra, c.config)
		var ce *ConfigError
		switch {
		case c.err != "" && (!errors.As(err, &ce) || ce.Msg != c.err):
			t.Errorf("%v %q: err %v, want %q", c.extra, c.config, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%v %q: %q %v, want %q", c.extra, c.config, got, err, c.want)
		}
	}
}

func TestRunsDirRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Symlink(dir, filepath.Join(dir, "link"))
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	for _, p := range []string{filepath.Join(dir, "link"), filepath.Join(dir, "file")} {
		_, err := prepareState(p)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Msg != "the runs directory could not be prepared: "+p+"; pass an absolute --runs-dir" {
			t.Errorf("%s: %v", p, err)
		}
	}
	st, err := prepareState(filepath.Join(dir, "new", "runs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"", "runs", "idem", "tmp", "owners"} {
		fi, err := os.Stat(filepath.Join(st.RunsDir(), ".openadapt-agent", sub))
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", sub, fi, err)
		}
	}
}
