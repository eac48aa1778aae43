package bundle

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
)

// Integrity is the verification result of one bundle.
type Integrity string

// The integrity levels (docs/bundle.md, Integrity levels).
const (
	// Verified: full verification passed (content digest and every listed asset).
	Verified Integrity = "verified"
	// ContentVerified: a [Metadata] load checked the content digest against the
	// stored file hashes but did not check (or, for sealed bundles, decrypt) the
	// assets. Never good enough for a run.
	ContentVerified Integrity = "content_verified"
	// LegacyUnverified: the bundle has no manifest (or one with an empty digest);
	// it loads in Flow without any verification and must be presented as unverified.
	LegacyUnverified Integrity = "legacy_unverified"
	// Failed: the bundle could not be loaded safely; see [Bundle.ErrorKind].
	Failed Integrity = "failed"
)

// Level selects how much a load verifies.
type Level int

const (
	// Full verification: the content digest plus every listed asset; for a
	// sealed bundle this decrypts every template (one scrypt per file). This is
	// what `bundle verify` does and what a run requires. The default.
	Full Level = iota
	// Metadata: parse and check the content digest only. For a sealed bundle
	// only workflow.json.enc is decrypted. Success yields [ContentVerified].
	Metadata
)

// KeyEnv is the environment variable holding the passphrase of sealed bundles.
// An empty value counts as unset.
const KeyEnv = "OPENADAPT_BUNDLE_KEY"

// Option configures [Discover] and [Load].
type Option func(*config) error

type config struct {
	key      string
	keySet   bool
	noKey    bool
	level    Level
	levelSet bool
	workers  int
	ctx      context.Context
}

// WithKey sets the passphrase for sealed bundles explicitly, instead of
// reading [KeyEnv]. An empty passphrase is rejected (use [WithoutKey]).
func WithKey(passphrase string) Option {
	return func(c *config) error {
		if passphrase == "" {
			return fmt.Errorf("%w: empty passphrase", ErrOption)
		}
		if c.noKey {
			return fmt.Errorf("%w: WithKey conflicts with WithoutKey", ErrOption)
		}
		c.key, c.keySet = passphrase, true
		return nil
	}
}

// WithoutKey ignores [KeyEnv]: sealed bundles then fail with [ErrMissingKey].
func WithoutKey() Option {
	return func(c *config) error {
		if c.keySet {
			return fmt.Errorf("%w: WithoutKey conflicts with WithKey", ErrOption)
		}
		c.noKey = true
		return nil
	}
}

// WithLevel selects the verification level; the default is [Full].
func WithLevel(l Level) Option {
	return func(c *config) error {
		if l != Full && l != Metadata {
			return fmt.Errorf("%w: unknown level %d", ErrOption, l)
		}
		if c.levelSet && c.level != l {
			return fmt.Errorf("%w: conflicting levels", ErrOption)
		}
		c.level, c.levelSet = l, true
		return nil
	}
}

// WithWorkers bounds the number of bundles processed at once and of
// concurrent key derivations. The default is GOMAXPROCS.
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("%w: workers must be at least 1", ErrOption)
		}
		c.workers = n
		return nil
	}
}

// WithContext makes [Discover] and [Load] stop promptly when ctx is done:
// no further bundle, asset or template is started, a file being hashed
// stops at its next 64 KiB chunk, and the call returns an error wrapping
// ctx's error instead of any (partial) result.
func WithContext(ctx context.Context) Option {
	return func(c *config) error {
		if ctx == nil {
			return fmt.Errorf("%w: nil context", ErrOption)
		}
		c.ctx = ctx
		return nil
	}
}

func newConfig(opts []Option) (*config, error) {
	c := &config{workers: runtime.GOMAXPROCS(0), ctx: context.Background()}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if !c.keySet && !c.noKey {
		c.key = os.Getenv(KeyEnv)
	}
	return c, nil
}

// Param is one entry of Flow's canonical runtime parameter schema
// (docs/bundle.md, Parameters): the vector MANIFEST's expected.params and the
// `parameters` of `bundle verify --json`. Names and types are schema and safe
// to show; values never appear here.
type Param struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Required bool     `json:"required"`
	Secret   bool     `json:"secret"`
	Choices  []string `json:"choices"`
}

// Provenance is the manifest's provenance block. Nothing protects it (it is
// outside the digest): it is informational and must never drive a security
// decision (docs/bundle.md, Manifests).
type Provenance struct {
	CompilerVersion                 string
	SourceRecordingSHA256           string
	CompilerConfigSHA256            string
	CreatedAt                       string
	PolicyName                      string
	Certified                       *bool
	CertificationStatus             string
	CertifiedAt                     string
	ExpiresAt                       string
	CertificationInvalidatedAt      string
	CertificationInvalidationReason string
	// HasGovernedAuthorizationTemplate reports a non-null
	// governed_authorization_template, which the Go port cannot re-derive.
	HasGovernedAuthorizationTemplate bool
}

// Bundle is the result of loading one bundle folder. Loading is fail-soft: a
// bundle that cannot be loaded is still returned, with Integrity [Failed] and
// a typed Err. Unless noted, metadata fields are meaningful only when
// Integrity is not [Failed]. No field holds protected data (names, intents,
// recorded values); use [Bundle.Protected].
type Bundle struct {
	// Dir is the bundle folder as discovered: the root as given, or
	// root + "/" + child folder name.
	Dir string
	// ID is the opaque workflow id "workflow_<24hex>", with a "_N" suffix for
	// the N-th duplicate within one discovery (docs/bundle.md, Workflow ids).
	// Always set.
	ID string
	// BaseID is ID without the duplicate suffix. Always set.
	BaseID string
	// Integrity is the verification result. Always set.
	Integrity Integrity
	// ErrorKind and Err say why a Failed bundle failed ("" and nil otherwise).
	// Err is an [*Error] matching exactly one kind sentinel; its text carries
	// no protected value.
	ErrorKind ErrorKind
	Err       error
	// Encrypted reports that workflow.json.enc is present (a sealed bundle). Always set.
	Encrypted bool
	// ContentDigest is the verified content digest (64 lowercase hex), set when
	// Integrity is Verified or ContentVerified.
	ContentDigest string
	// BundleVersion is Flow's bundle_version (docs/bundle.md,
	// bundle_version), "" when there
	// is none. Plaintext: "sha256:"+ContentDigest, set only when Verified.
	// Sealed: the keyless inventory hash, set even when verification fails
	// (it changes with any byte).
	BundleVersion string
	// SchemaVersion is the migrated workflow schema version (2 for v1 bundles).
	SchemaVersion int
	// StepCount is the length of the linear steps list.
	StepCount int
	// ActionStepCount counts the steps of Flow's canonical traversal.
	ActionStepCount int
	// Params is Flow's canonical runtime parameter schema, sorted by name.
	Params []Param
	// LegacyParams holds the legacy `params` names in JSON order (the Python
	// agent's run-tool properties).
	LegacyParams []string
	// ParamSpecNames holds the `param_specs` names in JSON order.
	ParamSpecNames []string
	// SecretParams holds the `secret_params` names in JSON order.
	SecretParams []string
	// ManifestSource is "embedded", "sidecar" or "" (no manifest).
	ManifestSource string
	// CompilerVersion is provenance.compiler_version ("" when absent). Unprotected.
	CompilerVersion string
	// Provenance is the manifest provenance, nil without a manifest. Unprotected.
	Provenance *Provenance

	protected *Protected
}

// BundleSHA256 returns "sha256:" + ContentDigest, the value that binds a
// bundle to a ledger admission, or "" when the digest is not verified.
func (b *Bundle) BundleSHA256() string {
	if b.ContentDigest == "" {
		return ""
	}
	return "sha256:" + b.ContentDigest
}

// Verified reports whether full verification passed. A run requires it.
func (b *Bundle) Verified() bool { return b.Integrity == Verified }

// Loaded reports whether the metadata fields are meaningful (Integrity is not Failed).
func (b *Bundle) Loaded() bool { return b.Integrity != Failed && b.Integrity != "" }

// DeclaredParams returns the MCP run-tool parameter names (docs/bundle.md,
// Parameters): the legacy params in JSON order, then param_specs names not yet
// present, in JSON order, minus every secret parameter.
func (b *Bundle) DeclaredParams() []string {
	secret := make(map[string]bool, len(b.SecretParams))
	for _, s := range b.SecretParams {
		secret[s] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{b.LegacyParams, b.ParamSpecNames} {
		for _, n := range list {
			if seen[n] {
				continue
			}
			seen[n] = true
			if !secret[n] {
				out = append(out, n)
			}
		}
	}
	return out
}

// Param returns the entry of Flow's parameter name in [Bundle.Params].
func (b *Bundle) Param(name string) (Param, bool) {
	i, ok := slices.BinarySearchFunc(b.Params, name, func(p Param, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return Param{}, false
	}
	return b.Params[i], true
}

// NamedValue is a parameter name with a recorded (protected) value.
type NamedValue struct {
	Name  string
	Value string
}

// Protected holds a bundle's protected data: display name, slugs derived from
// it, step intents and recorded example values. It must never reach stdout,
// MCP output or error text unless the operator explicitly asked for it.
type Protected struct {
	// Name is the workflow display name.
	Name string
	// AgentSlug is the Python agent slug (`_` separated); within one
	// [Discover] call a colliding slug becomes slug(<slug>_<folder name>).
	AgentSlug string
	// SkillSlug is Flow's emit-skill folder slug (`-` separated).
	SkillSlug string
	// StepIntents are the intents of the linear steps, in order.
	StepIntents []string
	// RecordedParams are the legacy params with their recorded examples, in JSON order.
	RecordedParams []NamedValue
	// SpecExamples are the non-null param_specs examples, in JSON order.
	SpecExamples []NamedValue
}

// Protected returns the bundle's protected data. It returns an error wrapping
// [ErrNotLoaded] when the bundle failed to load.
func (b *Bundle) Protected() (*Protected, error) {
	if b.protected == nil {
		return nil, fmt.Errorf("%w: integrity %s", ErrNotLoaded, b.Integrity)
	}
	p := *b.protected
	return &p, nil
}
