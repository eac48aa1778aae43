package serve

// Modes (docs/mcp.md "Modes"): --mode names a preset of the existing flags,
// so a mode never means more than the flags it stands for.
//
//   - sandbox: the synthetic sandbox; none of --bundles, --allow-run,
//     --tutorial or --authoring (serve with none of them is the sandbox
//     too);
//   - production: --allow-run over the --bundles roots, which it requires;
//   - attended: production plus --allow-attended-actions.
//
// Without --mode every flag means what it always meant: --bundles alone is
// read-only. A flag that contradicts the mode stops startup naming both.

// The --mode values.
const (
	ModeSandbox    = "sandbox"
	ModeProduction = "production"
	ModeAttended   = "attended"
)

// applyMode checks opts.Mode against the other flags and returns the
// options with the mode's preset applied. A mode value it does not know is
// a flag error; a contradiction is a configuration error naming both flags.
func (o Options) applyMode() (Options, error) {
	switch o.Mode {
	case "":
		return o, nil
	case ModeSandbox:
		for _, c := range []struct {
			set  bool
			flag string
		}{
			{len(o.roots()) > 0, "--bundles"},
			{o.AllowRun, "--allow-run"},
			{o.Tutorial, "--tutorial"},
			{o.Authoring, "--authoring"},
		} {
			if c.set {
				return o, configErrorf("--mode sandbox cannot be combined with %s (the sandbox serves only its own synthetic workflows)", c.flag)
			}
		}
		return o, nil
	case ModeProduction, ModeAttended:
		if o.Tutorial {
			return o, configErrorf("--mode %s cannot be combined with --tutorial (the tutorial is its own synthetic workflow: use --tutorial without --mode)", o.Mode)
		}
		if len(o.roots()) == 0 {
			return o, configErrorf("--mode %s requires --bundles (the folder of the workflows to run)", o.Mode)
		}
		if o.Mode == ModeProduction && o.AllowAttendedActions {
			return o, configErrorf("--mode production cannot be combined with --allow-attended-actions; use --mode attended")
		}
		o.AllowRun = true
		if o.Mode == ModeAttended {
			o.AllowAttendedActions = true
		}
		return o, nil
	}
	return o, &ConfigError{Msg: "--mode must be sandbox, production, or attended", Flag: true}
}

// sandboxFlags refuses, in the sandbox, every flag that only means something
// for real workflows run by Flow: the sandbox would ignore it, and a person
// who typed --allow-attended-actions or --url expects real runs, not
// synthetic ones. Naming the flag and the way to real runs fails closed
// instead of serving something other than what was asked for.
func (o Options) sandboxFlags() error {
	for _, c := range []struct {
		set  bool
		flag string
	}{
		{o.AllowAttendedActions, "--allow-attended-actions"},
		{o.AllowProtectedExport, "--allow-protected-export"},
		{o.AllowSyntheticRecordedDefaults, "--allow-synthetic-recorded-defaults"},
		{o.AllowURLOverride, "--allow-url-override"},
		{o.AllowModelGrounding, "--allow-model-grounding"},
		{o.URL != "", "--url"},
		{o.Config != "", "--config"},
		{o.Policy != "", "--policy"},
		{len(o.ExtraRunArgs) > 0, "--extra-run-arg"},
		{o.Headed, "--headed"},
	} {
		if c.set {
			return configErrorf("%s needs real workflows, and this is the sandbox (no --bundles, --allow-run, --tutorial or --authoring): add --bundles with --allow-run or --mode production|attended, or drop %s", c.flag, c.flag)
		}
	}
	return nil
}
