package serve

import (
	"errors"
	"strings"
	"testing"
)

// TestModeContradictions: every flag a mode contradicts stops startup with
// a configuration error naming both, before anything is prepared.
func TestModeContradictions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name  string
		set   func(*Options)
		flags []string // both flags the message must name
	}{
		{"sandbox with bundles", func(o *Options) { o.Mode = ModeSandbox }, []string{"--mode sandbox", "--bundles"}},
		{"sandbox with allow-run", func(o *Options) { o.Mode, o.Bundles, o.AllowRun = ModeSandbox, "", true }, []string{"--mode sandbox", "--allow-run"}},
		{"sandbox with tutorial", func(o *Options) { o.Mode, o.Bundles, o.Tutorial = ModeSandbox, "", true }, []string{"--mode sandbox", "--tutorial"}},
		{"sandbox with authoring", func(o *Options) { o.Mode, o.Bundles, o.Authoring = ModeSandbox, "", true }, []string{"--mode sandbox", "--authoring"}},
		{"sandbox with several roots", func(o *Options) { o.Mode, o.Bundles, o.BundleRoots = ModeSandbox, "", []string{e.bundles} }, []string{"--mode sandbox", "--bundles"}},
		{"production without bundles", func(o *Options) { o.Mode, o.Bundles = ModeProduction, "" }, []string{"--mode production", "--bundles"}},
		{"attended without bundles", func(o *Options) { o.Mode, o.Bundles = ModeAttended, "" }, []string{"--mode attended", "--bundles"}},
		{"production with tutorial", func(o *Options) { o.Mode, o.Tutorial = ModeProduction, true }, []string{"--mode production", "--tutorial"}},
		{"attended with tutorial", func(o *Options) { o.Mode, o.Tutorial = ModeAttended, true }, []string{"--mode attended", "--tutorial"}},
		{"production with attended actions", func(o *Options) { o.Mode, o.AllowAttendedActions = ModeProduction, true }, []string{"--mode production", "--allow-attended-actions"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := e.opts()
			c.set(&o)
			_, err := New(o, nil)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Flag {
				t.Fatalf("New: %v, want a configuration error", err)
			}
			for _, f := range c.flags {
				if !strings.Contains(ce.Msg, f) {
					t.Errorf("message %q does not name %s", ce.Msg, f)
				}
			}
		})
	}
}

// TestModeUnknown: a --mode value outside the three is a flag error.
func TestModeUnknown(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"Production", "read-only", "sandbox ", "tutorial"} {
		o := newEnv(t).opts()
		o.Mode = m
		_, err := New(o, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || !ce.Flag || ce.Msg != "--mode must be sandbox, production, or attended" {
			t.Fatalf("--mode %q: %v", m, err)
		}
	}
}

// TestModePresets: production is --allow-run over --bundles (one run tool
// per workflow, state kept), attended adds the attended decisions, and a
// flag the preset already implies is no contradiction.
func TestModePresets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.demo("demo", testBundle{salt: "mode"})
	base := e.opts()

	prod := base
	prod.Mode = ModeProduction
	s := start(t, prod)
	if !strings.Contains(s.srv.Banner(), "run tools enabled; attended decisions disabled") {
		t.Fatalf("production banner: %s", s.srv.Banner())
	}
	s.runTool() // registered
	if !s.srv.prep.stateful {
		t.Fatal("production keeps no state")
	}

	same := base
	same.Mode, same.AllowRun = ModeProduction, true
	if b := start(t, same).srv.Banner(); !strings.Contains(b, "run tools enabled") {
		t.Fatalf("production with --allow-run: %s", b)
	}

	o, err := Options{Mode: ModeAttended, Bundles: e.bundles}.applyMode()
	if err != nil || !o.AllowRun || !o.AllowAttendedActions {
		t.Fatalf("attended preset: %+v %v", o, err)
	}
	o, err = Options{Mode: ModeAttended, Bundles: e.bundles, AllowAttendedActions: true, AllowRun: true}.applyMode()
	if err != nil || !o.AllowRun || !o.AllowAttendedActions {
		t.Fatalf("attended with its own flags: %+v %v", o, err)
	}
	o, err = Options{Mode: ModeSandbox}.applyMode()
	if err != nil || o.AllowRun || o.AllowAttendedActions || o.Bundles != "" {
		t.Fatalf("sandbox preset: %+v %v", o, err)
	}

	// Without --mode, --bundles alone stays read-only.
	ro := start(t, base)
	if !strings.Contains(ro.srv.Banner(), "run tools disabled") || ro.srv.prep.stateful {
		t.Fatalf("read-only banner: %s", ro.srv.Banner())
	}
	for name := range ro.tools {
		if strings.HasPrefix(name, "run_workflow_") {
			t.Fatalf("read-only server registered %s", name)
		}
	}
}

// TestSandboxRefusesRealRunFlags: in the sandbox (no --bundles, --allow-run,
// --tutorial or --authoring, with or without --mode sandbox) a flag that
// only means something for real runs stops startup naming it, instead of
// being ignored by a server that runs nothing real.
func TestSandboxRefusesRealRunFlags(t *testing.T) {
	t.Parallel()
	for flag, set := range map[string]func(*Options){
		"--allow-attended-actions":            func(o *Options) { o.AllowAttendedActions = true },
		"--allow-protected-export":            func(o *Options) { o.AllowProtectedExport = true },
		"--allow-synthetic-recorded-defaults": func(o *Options) { o.AllowSyntheticRecordedDefaults = true },
		"--allow-url-override":                func(o *Options) { o.AllowURLOverride = true },
		"--allow-model-grounding":             func(o *Options) { o.AllowModelGrounding = true },
		"--url":                               func(o *Options) { o.URL = "https://example.test/" },
		"--config":                            func(o *Options) { o.Config = "deploy.yaml" },
		"--policy":                            func(o *Options) { o.Policy = "standard" },
		"--extra-run-arg":                     func(o *Options) { o.ExtraRunArgs = []string{"--x"} },
		"--headed":                            func(o *Options) { o.Headed = true },
	} {
		for _, mode := range []string{"", ModeSandbox} {
			o := Options{Sandbox: mode == "", Mode: mode, RunsDir: t.TempDir()}
			set(&o)
			_, err := New(o, nil)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Flag || !strings.Contains(ce.Msg, flag) || !strings.Contains(ce.Msg, "sandbox") {
				t.Errorf("mode %q, %s: New = %v, want a configuration error naming the flag and the sandbox", mode, flag, err)
			}
		}
	}
}

// TestAppOnlyNeedsAttendedActions: --attended-actions app-only outside the
// sandbox without --allow-attended-actions would narrow nothing, so it is a
// configuration error naming both flags; in the sandbox it is accepted.
func TestAppOnlyNeedsAttendedActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.opts()
	o.AttendedActions = AttendedAppOnly
	_, err := New(o, nil)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Flag || !strings.Contains(ce.Msg, "--attended-actions app-only") || !strings.Contains(ce.Msg, "--allow-attended-actions") {
		t.Fatalf("New = %v, want a configuration error naming both flags", err)
	}
	so := sandboxOpts(t, t.TempDir())
	so.AttendedActions = AttendedAppOnly
	s, err := New(so, nil)
	if err != nil {
		t.Fatalf("sandbox with app-only: %v", err)
	}
	s.Close()
}
