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
