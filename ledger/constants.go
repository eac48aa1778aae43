package ledger

// Pinned trust root (docs/ledger.md, Trust root): OpenAdapt's live signer
// registry, 2026-09.
const (
	// PinnedSignerRegistryIdentity is D("OpenAdapt qualification signer
	// registry v2\0", registry) of OpenAdapt's live signer registry. It
	// covers every signer, key, allowlist and status.
	PinnedSignerRegistryIdentity = "sha256:e243a23243b24986ed08812e284a1bd8c4993814149f02bcba79cc520e10ca14"

	evidenceRepo        = "OpenAdaptAI/.github"
	evidenceRepoID      = "858454062"
	evidenceRepoOwnerID = "132681217"
	opsRepo             = "OpenAdaptAI/openadapt-ops"
	opsRepoID           = "1172011294"
	retainedPolicy      = "sha256:e1444a08ce6b16736168cce027ce9d48abb2e0e246fc0cd79c0772fa8e423e11"
)

// Schema versions and media types.
const (
	schemaRegistry         = "openadapt.production-evidence-registry/v2"
	schemaRegistryRef      = "schemas/evidence-registry.schema.json"
	schemaSignerPointer    = "openadapt.qualification-signer-registry-pointer/v1"
	schemaSignerRegistry   = "openadapt.qualification-signer-registry/v2"
	schemaReference        = "openadapt.production-evidence-object-reference/v2"
	schemaRelease          = "openadapt.qualification-release/v2"
	schemaWorkflow         = "openadapt.qualification-admission/v4"
	schemaAuthority        = "openadapt.qualification-authority-state-receipt/v2"
	schemaRevocation       = "openadapt.qualification-revocation-state-receipt/v1"
	schemaInnerStatement   = "openadapt.qualification-evidence-signing-statement/v1"
	schemaOuterStatement   = "openadapt.production-public-trust-signing-statement/v1"
	schemaReleaseLedger    = "openadapt.production-lifecycle-admissions/v1"
	schemaWorkflowLedger   = "openadapt.production-workflow-admissions/v1"
	schemaTargetProjection = "openadapt.public-production-lifecycle/v1"
	schemaWorkflowProj     = "openadapt.public-production-workflow-admissions/v1"
	mediaSigstoreBundle    = "application/vnd.dev.sigstore.bundle.v0.3+json"
	payloadTypeStatement   = "application/vnd.openadapt.production-public-trust-signing-statement+json;version=1"

	kindRelease    = "qualification-release"
	kindWorkflow   = "qualification-admission"
	kindAuthority  = "qualification-authority-state-receipt"
	kindRevocation = "qualification-revocation-state-receipt"
	kindDecision   = "qualification-evidence-decision-receipt"
	kindSummary    = "production-acceptance-summary"
	bundleSuffix   = "-sigstore-bundle"
)

// regularKinds maps the 17 regular kinds to their (schema version,
// media-type) contract (docs/ledger.md, Objects).
var regularKinds = func() map[string][2]string {
	m := map[string][2]string{}
	add := func(kind, schema, name, n string) {
		m[kind] = [2]string{schema, "application/vnd.openadapt." + name + "+json;version=" + n}
	}
	add("production-acceptance-manifest", "openadapt.production-acceptance/v3", "production-acceptance", "3")
	add("production-acceptance-summary", "openadapt.production-lifecycle-evidence-summary/v3", "production-lifecycle-evidence-summary", "3")
	for _, k := range []struct{ kind, n string }{
		{"production-cloud-deploy-authorization", "1"},
		{"production-cloud-deployment-result", "1"},
		{"production-current-default", "1"},
		{"production-deployment-observation", "1"},
		{"production-lifecycle-checkpoint", "2"},
		{"qualification-admission", "4"},
		{"qualification-authority-state-receipt", "2"},
		{"qualification-campaign-permit", "3"},
		{"qualification-campaign-permit-policy", "3"},
		{"qualification-campaign-permit-receipt", "3"},
		{"qualification-campaign-permit-request", "3"},
		{"qualification-evidence-decision-receipt", "2"},
		{"qualification-release", "2"},
		{"qualification-revocation-state-receipt", "1"},
		{"support-release-admission", "1"},
	} {
		add(k.kind, "openadapt."+k.kind+"/v"+k.n, k.kind, k.n)
	}
	return m
}()

// targetNames is the list of the seven OpenAdapt products, in output order.
var targetNames = []string{"agent", "capture", "cloud", "desktop", "docs", "flow", "openadapt"}

type targetContract struct {
	claimScope   string
	kinds        []string // allowed release.kind values
	sourceRepo   string
	sourceRepoID string
}

// targetContracts are the seven targets' contracts (docs/ledger.md,
// Verdicts): claim scope, release kind and source repository.
var targetContracts = map[string]targetContract{
	"agent":     {"production_agent", []string{"package"}, "OpenAdaptAI/openadapt-agent", "1136136670"},
	"capture":   {"production_capture", []string{"package"}, "OpenAdaptAI/openadapt-capture", "1115283835"},
	"cloud":     {"production_cloud", []string{"deployment"}, "OpenAdaptAI/openadapt-cloud", "1300570990"},
	"desktop":   {"production_desktop", []string{"package", "hybrid"}, "OpenAdaptAI/openadapt-desktop", "1171291730"},
	"docs":      {"production_docs", []string{"deployment"}, "OpenAdaptAI/openadapt-ops", "1172011294"},
	"flow":      {"production_flow", []string{"package"}, "OpenAdaptAI/openadapt-flow", "1291376938"},
	"openadapt": {"production_openadapt", []string{"package"}, "OpenAdaptAI/OpenAdapt", "627024850"},
}

// objectPath returns the content-addressed path of an object (docs/ledger.md,
// Registry).
func objectPath(digest, kind string) string {
	hex := digest[len("sha256:"):]
	return "production-evidence/objects/sha256/" + hex[:2] + "/" + hex + "." + kind + ".json"
}

func signerRegistryPath(digest string) string {
	hex := digest[len("sha256:"):]
	return "production-evidence/signer-registries/sha256/" + hex[:2] + "/" + hex + ".qualification-signer-registry.json"
}

// kindContract returns the (schema, media type) contract of a known kind,
// regular or bundle.
func kindContract(kind string) (schema, media string, bundle, ok bool) {
	if c, ok := regularKinds[kind]; ok {
		return c[0], c[1], false, true
	}
	if len(kind) > len(bundleSuffix) && kind[len(kind)-len(bundleSuffix):] == bundleSuffix {
		if _, ok := regularKinds[kind[:len(kind)-len(bundleSuffix)]]; ok {
			return mediaSigstoreBundle, mediaSigstoreBundle, true, true
		}
	}
	return "", "", false, false
}

// TargetNames returns the seven OpenAdapt products (docs/ledger.md, Verdicts),
// in output order.
func TargetNames() []string { return append([]string(nil), targetNames...) }
