package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/OpenAdaptAI/openadapt-agent/internal/util/buildinfo"
)

// The distribution manifests live at the repository root. Tests named
// TestDist* are also run by .ci/checks/40-manifests.sh.
const (
	serverJSONPath   = "../server.json"
	manifestJSONPath = "../manifest.json"
	registrySchema   = "../testdata/registry/server.schema.json"
	// registrySchemaSHA256 pins the vendored copy (testdata/registry/SOURCE.md).
	registrySchemaSHA256 = "2e1e2dc758185bfc91023df4e5ace0e1c1bdb7b7b3d6614bb9ac6b9e9a9c2f68"
	registrySchemaURL    = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
)

func readJSONFile(t *testing.T, path string) (raw []byte, doc map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return raw, doc
}

// TestDistServerJSONSchema validates server.json against the vendored
// registry schema with a small draft-07 validator that knows every keyword the
// schema uses (and fails on any keyword it does not know, so a schema update
// cannot silently weaken the check).
func TestDistServerJSONSchema(t *testing.T) {
	t.Parallel()
	schemaRaw, schema := readJSONFile(t, registrySchema)
	if sum := sha256.Sum256(schemaRaw); hex.EncodeToString(sum[:]) != registrySchemaSHA256 {
		t.Fatalf("vendored schema digest changed; update testdata/registry/SOURCE.md and registrySchemaSHA256 together")
	}
	if schema["$id"] != registrySchemaURL {
		t.Fatalf("vendored schema $id = %v, want %s", schema["$id"], registrySchemaURL)
	}
	_, doc := readJSONFile(t, serverJSONPath)
	v := &schemaValidator{root: schema}
	if errs := v.validate(schema, doc, "$"); len(errs) > 0 {
		t.Fatalf("server.json does not match %s:\n%s", registrySchemaURL, strings.Join(errs, "\n"))
	}
	if doc["$schema"] != registrySchemaURL {
		t.Errorf("server.json $schema = %v, want %s", doc["$schema"], registrySchemaURL)
	}
}

// TestDistSchemaValidatorRejects proves the validator used above fails on
// documents that break the schema's required fields and limits.
func TestDistSchemaValidatorRejects(t *testing.T) {
	t.Parallel()
	_, schema := readJSONFile(t, registrySchema)
	_, good := readJSONFile(t, serverJSONPath)
	mutations := map[string]func(d map[string]any){
		"missing name":        func(d map[string]any) { delete(d, "name") },
		"missing version":     func(d map[string]any) { delete(d, "version") },
		"missing description": func(d map[string]any) { delete(d, "description") },
		"long description":    func(d map[string]any) { d["description"] = strings.Repeat("x", 101) },
		"bad name":            func(d map[string]any) { d["name"] = "no-slash" },
		"package without transport": func(d map[string]any) {
			delete(d["packages"].([]any)[0].(map[string]any), "transport")
		},
		"named argument without name": func(d map[string]any) {
			delete(d["packages"].([]any)[0].(map[string]any)["packageArguments"].([]any)[1].(map[string]any), "name")
		},
		"env without name": func(d map[string]any) {
			delete(d["packages"].([]any)[0].(map[string]any)["environmentVariables"].([]any)[0].(map[string]any), "name")
		},
		"bad sha256": func(d map[string]any) {
			d["packages"].([]any)[0].(map[string]any)["fileSha256"] = "XYZ"
		},
		"package version latest": func(d map[string]any) {
			d["packages"].([]any)[0].(map[string]any)["version"] = "latest"
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			doc := deepCopyJSON(t, good)
			mutate(doc)
			v := &schemaValidator{root: schema}
			if errs := v.validate(schema, doc, "$"); len(errs) == 0 {
				t.Fatal("validator accepted a document that breaks the schema")
			}
		})
	}
}

func deepCopyJSON(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDistVersionsAgree enforces the one source of truth: VERSION
// (internal/util/buildinfo) equals server.json's version, every package version
// and download URL, and manifest.json's version.
func TestDistVersionsAgree(t *testing.T) {
	t.Parallel()
	want := buildinfo.File()
	_, server := readJSONFile(t, serverJSONPath)
	_, manifest := readJSONFile(t, manifestJSONPath)
	if server["version"] != want {
		t.Errorf("server.json version = %v, want VERSION %s", server["version"], want)
	}
	if manifest["version"] != want {
		t.Errorf("manifest.json version = %v, want VERSION %s", manifest["version"], want)
	}
	for i, p := range server["packages"].([]any) {
		pkg := p.(map[string]any)
		if pkg["version"] != want {
			t.Errorf("server.json packages[%d].version = %v, want %s", i, pkg["version"], want)
		}
		id, _ := pkg["identifier"].(string)
		if !strings.Contains(id, "/v"+want+"/") || !strings.Contains(id, "_"+want+"_") {
			t.Errorf("server.json packages[%d].identifier does not name release v%s: %s", i, want, id)
		}
	}
	if server["description"] != manifest["description"] {
		t.Errorf("server.json and manifest.json descriptions differ")
	}
}

// TestDistServerJSONReadOnly checks the registry entry's contract: stdio,
// `serve --bundles DIR` with --bundles required, the bundle key as a secret
// environment variable, one mcpb package per release target, and no flag that
// widens access (read-only by default).
func TestDistServerJSONReadOnly(t *testing.T) {
	t.Parallel()
	raw, server := readJSONFile(t, serverJSONPath)
	// The attended setup is shown as optional arguments
	// that start off; nothing else widens access.
	for _, flag := range []string{"--allow-run", "--allow-protected-export", "--allow-synthetic", "--allow-url-override", "--authoring", "--tutorial"} {
		if strings.Contains(string(raw), flag) {
			t.Fatalf("server.json must not mention %s: registry installs start read-only", flag)
		}
	}
	if server["name"] != "io.github.OpenAdaptAI/openadapt-agent" {
		t.Errorf("name = %v", server["name"])
	}
	var targets []string
	for i, p := range server["packages"].([]any) {
		pkg := p.(map[string]any)
		if pkg["registryType"] != "mcpb" {
			t.Errorf("packages[%d].registryType = %v, want mcpb", i, pkg["registryType"])
		}
		if tr := pkg["transport"].(map[string]any); tr["type"] != "stdio" {
			t.Errorf("packages[%d].transport = %v, want stdio", i, tr)
		}
		// The repository holds a placeholder digest; the release computes the
		// real one for the published copy (see the README's Releases section).
		if pkg["fileSha256"] != strings.Repeat("0", 64) {
			t.Errorf("packages[%d].fileSha256 must be the all-zero placeholder in the repository", i)
		}
		id := pkg["identifier"].(string)
		u, err := url.Parse(id)
		if err != nil || u.Scheme != "https" || u.Host != "github.com" || !strings.Contains(strings.ToLower(id), "mcp") || !strings.HasSuffix(id, ".mcpb") {
			t.Errorf("packages[%d].identifier = %s: the registry wants an https GitHub release URL containing \"mcp\"", i, id)
		}
		m := regexp.MustCompile(`_([a-z]+)_([a-z0-9]+)\.mcpb$`).FindStringSubmatch(id)
		if m != nil {
			targets = append(targets, m[1]+"/"+m[2])
		}
		args := pkg["packageArguments"].([]any)
		if a := args[0].(map[string]any); a["type"] != "positional" || a["value"] != "serve" {
			t.Errorf("packages[%d].packageArguments[0] = %v, want positional serve", i, a)
		}
		var bundles map[string]any
		for _, a := range args {
			if a.(map[string]any)["name"] == "--bundles" {
				bundles = a.(map[string]any)
			}
		}
		if bundles == nil || bundles["isRequired"] != true || bundles["format"] != "filepath" || bundles["type"] != "named" {
			t.Errorf("packages[%d]: --bundles must be a required named filepath argument, got %v", i, bundles)
		}
		// The attended arguments mirror manifest.json's user_config: the
		// booleans default to "false" (rendered --flag=false), the paths
		// are optional.
		attended := map[string]string{"--allow-attended-actions": "boolean", "--config": "filepath", "--headed": "boolean", "--flow-python": "filepath"}
		for _, a := range args {
			a := a.(map[string]any)
			name, _ := a["name"].(string)
			if strings.HasPrefix(name, "--allow") && name != "--allow-attended-actions" {
				t.Errorf("packages[%d]: %s widens access", i, name)
			}
			f, ok := attended[name]
			if !ok {
				continue
			}
			delete(attended, name)
			if a["type"] != "named" || a["isRequired"] != false || a["format"] != f || (f == "boolean") != (a["default"] == "false") {
				t.Errorf("packages[%d]: %s must be an optional named %s argument (booleans default \"false\"), got %v", i, name, f, a)
			}
		}
		if len(attended) != 0 {
			t.Errorf("packages[%d]: server.json lacks the attended setup arguments %v", i, attended)
		}
		env := pkg["environmentVariables"].([]any)
		if len(env) != 1 {
			t.Fatalf("packages[%d]: want exactly OPENADAPT_BUNDLE_KEY in environmentVariables", i)
		}
		if e := env[0].(map[string]any); e["name"] != "OPENADAPT_BUNDLE_KEY" || e["isSecret"] != true || e["isRequired"] != false {
			t.Errorf("packages[%d]: OPENADAPT_BUNDLE_KEY must be a secret, optional variable, got %v", i, e)
		}
	}
	sort.Strings(targets)
	want := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64"}
	if !slices.Equal(targets, want) {
		t.Errorf("mcpb packages cover %v, want %v", targets, want)
	}
}

// TestDistManifestReadOnly checks the MCPB manifest beyond what
// `mcpb validate` checks: a binary server, every opt-in defaulting to off, the
// bundle key only in the environment, and the five read tools listed.
func TestDistManifestReadOnly(t *testing.T) {
	t.Parallel()
	_, m := readJSONFile(t, manifestJSONPath)
	if m["manifest_version"] != "0.3" {
		t.Errorf("manifest_version = %v, want 0.3", m["manifest_version"])
	}
	server := m["server"].(map[string]any)
	if server["type"] != "binary" || server["entry_point"] != "server/openadapt-agent" {
		t.Errorf("server = %v, want a binary at server/openadapt-agent", server)
	}
	cfg := server["mcp_config"].(map[string]any)
	var args []string
	for _, a := range cfg["args"].([]any) {
		args = append(args, a.(string))
	}
	if len(args) < 3 || args[0] != "serve" || args[1] != "--bundles" || args[2] != "${user_config.bundles_dir}" {
		t.Errorf("args = %q, want serve --bundles ${user_config.bundles_dir} …", args)
	}
	userConfig := m["user_config"].(map[string]any)
	if bd := userConfig["bundles_dir"].(map[string]any); bd["type"] != "directory" || bd["required"] != true {
		t.Errorf("user_config.bundles_dir = %v, want a required directory", bd)
	}
	// runs_dir is optional: empty means serve's
	// per-user default.
	if rd := userConfig["runs_dir"].(map[string]any); rd["required"] != false || rd["default"] != "" {
		t.Errorf("user_config.runs_dir = %v, want optional with default \"\"", rd)
	}
	for _, a := range args {
		if strings.Contains(a, "bundle_key") {
			t.Errorf("the bundle key must never be an argument: %q", a)
		}
		if !strings.HasPrefix(a, "--allow") {
			continue
		}
		// Every --allow-* flag takes its value from a boolean that is off by
		// default, so an install starts read-only.
		m := regexp.MustCompile(`^--allow-[a-z-]+=\$\{user_config\.([a-z_]+)\}$`).FindStringSubmatch(a)
		if m == nil {
			t.Errorf("argument %q: opt-in flags must be --allow-x=${user_config.y}", a)
			continue
		}
		opt, _ := userConfig[m[1]].(map[string]any)
		if opt == nil || opt["type"] != "boolean" || opt["default"] != false {
			t.Errorf("user_config.%s must be a boolean defaulting to false, got %v", m[1], opt)
		}
	}
	if strings.Contains(strings.Join(args, " "), "--allow-protected-export") {
		t.Error("manifest.json must not offer --allow-protected-export")
	}
	env := cfg["env"].(map[string]any)
	if env["OPENADAPT_BUNDLE_KEY"] != "${user_config.bundle_key}" {
		t.Errorf("env = %v, want OPENADAPT_BUNDLE_KEY from user_config.bundle_key", env)
	}
	// mcpb leaves "${user_config.x}" unreplaced when x has no value and no
	// default, so every optional setting needs a default. A default is
	// substituted as is: "${HOME}/x" would reach serve unexpanded.
	for name, o := range userConfig {
		opt := o.(map[string]any)
		if d, ok := opt["default"].(string); ok && strings.Contains(d, "${") {
			t.Errorf("user_config.%s default %q holds a variable that mcpb does not expand there", name, d)
		}
		if opt["required"] != true {
			if _, ok := opt["default"]; !ok {
				t.Errorf("user_config.%s is optional but has no default", name)
			}
		}
	}
	if bk := userConfig["bundle_key"].(map[string]any); bk["sensitive"] != true || bk["type"] != "string" {
		t.Errorf("user_config.bundle_key must be a sensitive string, got %v", bk)
	}
	if win := cfg["platform_overrides"].(map[string]any)["win32"].(map[string]any); win["command"] != "${__dirname}/server/openadapt-agent.exe" {
		t.Errorf("win32 override = %v", win)
	}
	var tools []string
	for _, tl := range m["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["name"].(string))
	}
	sort.Strings(tools)
	wantTools := []string{"get_attention_item", "get_run_report", "get_workflow", "list_needs_attention", "list_workflows"}
	if !slices.Equal(tools, wantTools) || m["tools_generated"] != true {
		t.Errorf("tools = %v (tools_generated %v), want the five read tools and tools_generated", tools, m["tools_generated"])
	}
}

// schemaValidator is a deliberately small JSON Schema (draft-07) validator:
// enough for the registry's server.schema.json and nothing more.
type schemaValidator struct{ root map[string]any }

// annotations are keywords that never affect validity.
var schemaAnnotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"example": true, "examples": true, "default": true, "definitions": true, "discriminator": true,
}

func (v *schemaValidator) validate(schema map[string]any, inst any, at string) []string {
	var errs []string
	fail := func(format string, a ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, a...)) }
	keys := make([]string, 0, len(schema))
	for k := range schema {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kw := schema[k]
		switch k {
		case "$ref":
			ref := kw.(string)
			name, ok := strings.CutPrefix(ref, "#/definitions/")
			if !ok {
				fail("unsupported $ref %s", ref)
				continue
			}
			sub, ok := v.root["definitions"].(map[string]any)[name].(map[string]any)
			if !ok {
				fail("unknown definition %s", name)
				continue
			}
			errs = append(errs, v.validate(sub, inst, at)...)
		case "allOf":
			for _, s := range kw.([]any) {
				errs = append(errs, v.validate(s.(map[string]any), inst, at)...)
			}
		case "anyOf", "oneOf":
			matched := 0
			for _, s := range kw.([]any) {
				if len(v.validate(s.(map[string]any), inst, at)) == 0 {
					matched++
				}
			}
			if matched == 0 || (k == "oneOf" && matched > 1) {
				fail("%s: %d of %d alternatives match", k, matched, len(kw.([]any)))
			}
		case "not":
			if len(v.validate(kw.(map[string]any), inst, at)) == 0 {
				fail("matches a schema it must not match")
			}
		case "type":
			if !jsonTypeIs(inst, kw.(string)) {
				fail("want type %s", kw)
			}
		case "const":
			if !jsonEqual(inst, kw) {
				fail("want %v", kw)
			}
		case "enum":
			if !slices.ContainsFunc(kw.([]any), func(e any) bool { return jsonEqual(inst, e) }) {
				fail("value %v is not one of %v", inst, kw)
			}
		case "required":
			if obj, ok := inst.(map[string]any); ok {
				for _, r := range kw.([]any) {
					if _, ok := obj[r.(string)]; !ok {
						fail("missing required %q", r)
					}
				}
			}
		case "properties":
			if obj, ok := inst.(map[string]any); ok {
				for name, s := range kw.(map[string]any) {
					if val, ok := obj[name]; ok {
						errs = append(errs, v.validate(s.(map[string]any), val, at+"."+name)...)
					}
				}
			}
		case "additionalProperties":
			obj, ok := inst.(map[string]any)
			if !ok {
				continue
			}
			props, _ := schema["properties"].(map[string]any)
			for name, val := range obj {
				if _, declared := props[name]; declared {
					continue
				}
				switch ap := kw.(type) {
				case bool:
					if !ap {
						fail("property %q is not allowed", name)
					}
				case map[string]any:
					errs = append(errs, v.validate(ap, val, at+"."+name)...)
				}
			}
		case "items":
			if arr, ok := inst.([]any); ok {
				for i, el := range arr {
					errs = append(errs, v.validate(kw.(map[string]any), el, fmt.Sprintf("%s[%d]", at, i))...)
				}
			}
		case "pattern":
			if s, ok := inst.(string); ok && !regexp.MustCompile(kw.(string)).MatchString(s) {
				fail("%q does not match %s", s, kw)
			}
		case "minLength", "maxLength":
			s, ok := inst.(string)
			if !ok {
				continue
			}
			n := len([]rune(s))
			limit := int(kw.(float64))
			if (k == "minLength" && n < limit) || (k == "maxLength" && n > limit) {
				fail("length %d breaks %s %d", n, k, limit)
			}
		case "format":
			if s, ok := inst.(string); ok && kw == "uri" {
				if u, err := url.Parse(s); err != nil || u.Scheme == "" {
					fail("%q is not a URI", s)
				}
			}
		default:
			if !schemaAnnotations[k] {
				fail("the test's validator does not support keyword %q; extend it before trusting the result", k)
			}
		}
	}
	return errs
}

func jsonTypeIs(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "null":
		return v == nil
	}
	return false
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// mcpbSubstitute replaces ${user_config.KEY} the way mcpb hosts do
// (@anthropic-ai/mcpb 2.1.2, shared/config.js): booleans become "true" or
// "false", other values their string form.
func mcpbSubstitute(s string, userConfig map[string]any) string {
	return regexp.MustCompile(`\$\{user_config\.([a-z_]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
		key := m[len("${user_config.") : len(m)-1]
		switch v := userConfig[key].(type) {
		case bool:
			return strconv.FormatBool(v)
		case string:
			return v
		}
		return m
	})
}

// TestDistManifestArgsStartServe starts serve in process with the argument
// list of manifest.json after mcpb's substitution, with the defaults (read
// only) and with "Allow runs" turned on, and checks the banner. This proves
// the `--allow-run=${user_config.allow_run}` form parses as a boolean flag.
func TestDistManifestArgsStartServe(t *testing.T) {
	_, m := readJSONFile(t, manifestJSONPath)
	cfg := m["server"].(map[string]any)["mcp_config"].(map[string]any)
	for _, tc := range []struct {
		allowRun bool
		want     string
		runsDir  bool
	}{{false, "; run tools disabled;", true}, {true, "; run tools enabled;", true}, {false, "; run tools disabled;", false}, {true, "; run tools enabled;", false}} {
		userConfig := map[string]any{}
		for k, o := range m["user_config"].(map[string]any) {
			userConfig[k] = o.(map[string]any)["default"]
		}
		state := t.TempDir()
		t.Setenv("XDG_STATE_HOME", state)
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		userConfig["bundles_dir"] = t.TempDir()
		if tc.runsDir {
			userConfig["runs_dir"] = filepath.Join(t.TempDir(), "runs")
		}
		userConfig["allow_run"] = tc.allowRun
		var args []string
		for _, a := range cfg["args"].([]any) {
			args = append(args, mcpbSubstitute(a.(string), userConfig))
		}
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), args, nil, &stdout, &stderr)
		if code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("allow_run=%v: serve %q exited %d, stdout %q, stderr %q; want exit 0 and %q", tc.allowRun, args, code, stdout.String(), stderr.String(), tc.want)
		}
		// With runs_dir left empty, a server that runs Flow uses the
		// per-user state folder; a read-only one creates nothing.
		_, err := os.Stat(filepath.Join(state, "openadapt-agent", "runs", ".openadapt-agent"))
		if !tc.runsDir && tc.allowRun != (err == nil) {
			t.Errorf("allow_run=%v, runs_dir empty: per-user state folder exists = %v", tc.allowRun, err == nil)
		}
	}
}

// TestDistServerJSONArgsStartServe builds the command line a registry client
// builds from server.json's packageArguments (the positional value, then each
// named argument with a value or its default; the attended setup's defaults
// are off) and checks that serve starts read-only.
func TestDistServerJSONArgsStartServe(t *testing.T) {
	t.Parallel()
	_, server := readJSONFile(t, serverJSONPath)
	pkg := server["packages"].([]any)[0].(map[string]any)
	values := map[string]string{"--bundles": t.TempDir(), "--runs-dir": filepath.Join(t.TempDir(), "runs")}
	var args []string
	for _, a := range pkg["packageArguments"].([]any) {
		arg := a.(map[string]any)
		switch arg["type"] {
		case "positional":
			args = append(args, arg["value"].(string))
		case "named":
			// A value the user gives, else the default as --flag=value
			// (the schema's NamedArgument form), else an optional
			// argument is left out.
			name := arg["name"].(string)
			if v, ok := values[name]; ok {
				args = append(args, name, v)
			} else if d, ok := arg["default"].(string); ok {
				args = append(args, name+"="+d)
			} else if arg["isRequired"] == true {
				t.Fatalf("no test value for %s", name)
			}
		}
	}
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, nil, &stdout, &stderr)
	if code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "; run tools disabled;") || !strings.Contains(stderr.String(), "protected MCP export disabled") ||
		!strings.Contains(stderr.String(), "; attended decisions disabled;") {
		t.Errorf("serve %q exited %d, stdout %q, stderr %q; want a read-only start", args, code, stdout.String(), stderr.String())
	}
}
