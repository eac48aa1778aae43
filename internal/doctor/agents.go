package doctor

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// ServerName is the name the snippets register the server under.
const ServerName = "openadapt-agent"

// agent is one supported MCP host.
type agent struct {
	id       string   // check id suffix
	name     string   // display name
	binaries []string // programs on PATH
	// configDir returns the host's config folder, "" when unknown.
	configDir func(env Env) string
	// snippet returns the registration fix for the given command line.
	snippet func(exe string, args []string) string
}

var agents = []agent{
	{
		id:       "claude-code",
		name:     "Claude Code",
		binaries: []string{"claude"},
		configDir: func(env Env) string {
			if d := env.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
				return d
			}
			return homeJoin(env, ".claude")
		},
		snippet: func(exe string, args []string) string {
			return "claude mcp add --scope user " + ServerName + " -- " + strings.Join(quoteAll(append([]string{exe}, args...)), " ")
		},
	},
	{
		id:       "codex",
		name:     "Codex",
		binaries: []string{"codex"},
		configDir: func(env Env) string {
			if d := env.Getenv("CODEX_HOME"); d != "" {
				return d
			}
			return homeJoin(env, ".codex")
		},
		snippet: func(exe string, args []string) string {
			// TOML basic strings accept JSON string escapes.
			var b strings.Builder
			b.WriteString("add to ~/.codex/config.toml (env_vars forwards the bundle key without storing it):\n")
			b.WriteString("[mcp_servers." + ServerName + "]\n")
			b.WriteString("command = " + jsonString(exe) + "\n")
			b.WriteString("args = [" + strings.Join(mapStrings(args, jsonString), ", ") + "]\n")
			b.WriteString(`env_vars = ["OPENADAPT_BUNDLE_KEY"]`)
			return b.String()
		},
	},
	{
		id:       "cursor",
		name:     "Cursor",
		binaries: []string{"cursor", "cursor-agent"},
		configDir: func(env Env) string {
			return homeJoin(env, ".cursor")
		},
		snippet: func(exe string, args []string) string {
			// Cursor fills ${env:NAME} from its own environment when it
			// starts the server: the key is never stored in the file.
			doc := map[string]any{"mcpServers": map[string]any{ServerName: map[string]any{"command": exe, "args": args,
				"env": map[string]string{"OPENADAPT_BUNDLE_KEY": "${env:OPENADAPT_BUNDLE_KEY}"}}}}
			b, _ := json.MarshalIndent(doc, "", "  ")
			return "add to ~/.cursor/mcp.json (merge into an existing mcpServers object):\n" + string(b)
		},
	},
	{
		id:       "gemini-cli",
		name:     "Gemini CLI",
		binaries: []string{"gemini"},
		configDir: func(env Env) string {
			return homeJoin(env, ".gemini")
		},
		snippet: func(exe string, args []string) string {
			// Gemini CLI withholds variables named like secrets from the
			// servers it starts unless the entry names them; it expands
			// $NAME when it starts the server, so the key is not stored.
			// Everything after -- is the server's own arguments.
			return "gemini mcp add --scope user " + ServerName + " " + quote(exe) + " -e " + quote("OPENADAPT_BUNDLE_KEY=$OPENADAPT_BUNDLE_KEY") +
				" -- " + strings.Join(quoteAll(args), " ")
		},
	},
}

func homeJoin(env Env, name string) string {
	if env.HomeDir == "" {
		return ""
	}
	return filepath.Join(env.HomeDir, name)
}

// ExePlaceholder stands for this program's absolute path when doctor
// knows no lasting one (a go run build, with no openadapt-agent on PATH).
const ExePlaceholder = "/ABSOLUTE/PATH/TO/openadapt-agent"

// serverCommand returns the program and arguments an agent should start:
// serve with the folders and options doctor was given, absolute. The
// program is this binary's absolute path, else the absolute path of the
// openadapt-agent on PATH, else [ExePlaceholder] (known is false): hosts
// start servers with their own PATH and working folder, so a bare name is
// never registered.
func serverCommand(env Env, opts Options) (exe string, args []string, known bool) {
	exe, known = ExePlaceholder, false
	if e := env.Executable; e != "" && filepath.IsAbs(e) && !inTemp(env, e) {
		exe, known = e, true
	} else if p, err := env.LookPath(ServerName); err == nil && filepath.IsAbs(p) && !inTemp(env, p) {
		exe, known = p, true
	}
	bundles := "/ABSOLUTE/PATH/TO/bundles"
	if opts.Bundles != "" {
		bundles = absFrom(env.WorkDir, opts.Bundles)
	}
	// serve's default runs folder is the per-user state folder, which works
	// from any working folder: name --runs-dir only when the operator did.
	args = []string{"serve", "--bundles", bundles}
	if opts.RunsDirSet {
		args = append(args, "--runs-dir", absFrom(env.WorkDir, opts.RunsDir))
	}
	if opts.FlowCLISet {
		args = append(args, "--flow-cli", opts.FlowCLI)
	}
	if opts.Ledger != "" {
		args = append(args, "--ledger", absFrom(env.WorkDir, opts.Ledger))
	}
	return exe, args, known
}

// ModesNote follows every registration: the snippet is read-only, and the
// modes say what to add for more (docs/mcp.md, Modes).
const ModesNote = "this registration is read-only (list, search, get); to let the agent run workflows add --mode production after serve, " +
	"or --mode attended for the attended decisions too (both need openadapt-flow); serve with no flags at all is the synthetic sandbox"

// inTemp reports whether p is a throwaway build (go run, go test) whose path
// would not survive.
func inTemp(env Env, p string) bool {
	if strings.Contains(filepath.ToSlash(p), "/go-build") {
		return true
	}
	if env.TempDir == "" {
		return false
	}
	rel, err := filepath.Rel(env.TempDir, p)
	return err == nil && !strings.HasPrefix(rel, "..")
}

// InstallCommand installs this program with Go; ReleasesURL is where the
// verified release archives are. The README's Install section shows both,
// and InstallHint points to it (a test in cmd keeps them in step).
const (
	InstallCommand = "go install github.com/OpenAdaptAI/openadapt-agent/cmd/openadapt-agent@latest"
	ReleasesURL    = "https://github.com/OpenAdaptAI/openadapt-agent/releases"
	InstallHint    = "install openadapt-agent first (the README's Install section: a release archive from " + ReleasesURL +
		", verified against its signed checksums.txt, or " + InstallCommand + " once the module is published; put it on PATH)"
)

func checkAgents(env Env, opts Options) []Check {
	exe, args, known := serverCommand(env, opts)
	var out []Check
	for _, a := range agents {
		var found []string
		for _, bin := range a.binaries {
			if _, err := env.LookPath(bin); err == nil {
				found = append(found, bin+" on PATH")
				break
			}
		}
		if d := a.configDir(env); d != "" {
			if fi, err := env.Stat(d); err == nil && fi.IsDir() {
				found = append(found, "config folder "+tildePath(env, d))
			}
		}
		if len(found) == 0 {
			continue
		}
		c := Check{
			ID:      "agent." + a.id,
			Status:  OK,
			Message: a.name + " detected (" + strings.Join(found, ", ") + ")",
			Fix:     a.snippet(exe, args) + "\n" + ModesNote,
		}
		if !known {
			c.Status = Warn
			c.Message += ", but this doctor is a temporary build (go run) and openadapt-agent is not on PATH, so there is no lasting program to register"
			c.Fix = InstallHint + " (or, in a clone, go build -o openadapt-agent ./cmd/openadapt-agent), then register its absolute path:\n" + c.Fix
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		out = append(out, Check{
			ID:      IDAgents,
			Status:  Warn,
			Message: "no supported agent detected (Claude Code, Codex, Cursor or Gemini CLI: no config folder, no program on PATH)",
			Fix:     "install one of them, then run doctor again for its exact registration snippet (the README shows all four)",
		})
	}
	return out
}

// tildePath shows a path under the home folder as ~/….
func tildePath(env Env, p string) string {
	if env.HomeDir != "" {
		if rel, err := filepath.Rel(env.HomeDir, p); err == nil && !strings.HasPrefix(rel, "..") {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mapStrings(in []string, f func(string) string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = f(s)
	}
	return out
}

// quote returns s as one POSIX shell word: unchanged when it has only safe
// characters, otherwise in single quotes.
func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func quoteAll(in []string) []string { return mapStrings(in, quote) }
