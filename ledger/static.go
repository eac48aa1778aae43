package ledger

import "sync"

// projectionStatic holds the exact static fields of each target in the
// public target projection (docs/ledger.md, Verdicts), compiled in from OpenAdapt's
// published projection of 2026-09-02.
const projectionStaticJSON = `
{"agent":{"artifact_authority_by_kind":{"sdist":"pypi","wheel":"pypi"},"display_name":"OpenAdapt Agent","id":"agent","lifecycle_scope":"repository","lifecycle_subject":"openadapt-agent","package_index_project":"openadapt-agent","release_kind":"public_package","required_artifact_kinds":["sdist","wheel"],"required_claim_scope":"qualified_agent_bridge_release","source_repository":"OpenAdaptAI/openadapt-agent"},"capture":{"artifact_authority_by_kind":{"sdist":"pypi","wheel":"pypi"},"display_name":"OpenAdapt Capture","id":"capture","lifecycle_scope":"repository","lifecycle_subject":"openadapt-capture","package_index_project":"openadapt-capture","release_kind":"public_package","required_artifact_kinds":["sdist","wheel"],"required_claim_scope":"qualified_native_recorder_release","source_repository":"OpenAdaptAI/openadapt-capture"},"cloud":{"artifact_authority_by_kind":{},"display_name":"OpenAdapt Cloud","id":"cloud","lifecycle_scope":"repository","lifecycle_subject":"openadapt-cloud","package_index_project":null,"release_kind":"private_deployment","required_artifact_kinds":[],"required_claim_scope":"qualified_workflow_control_plane_deployment","source_repository":"OpenAdaptAI/openadapt-cloud"},"desktop":{"artifact_authority_by_kind":{"linux-installer":"github_release","macos-installer":"github_release","sdist":"pypi","wheel":"pypi","windows-installer":"github_release"},"display_name":"OpenAdapt Desktop","id":"desktop","lifecycle_scope":"repository","lifecycle_subject":"openadapt-desktop","package_index_project":"openadapt-desktop","release_kind":"public_package","required_artifact_kinds":["linux-installer","macos-installer","sdist","wheel","windows-installer"],"required_claim_scope":"qualified_native_workflow_desktop_release","source_repository":"OpenAdaptAI/openadapt-desktop"},"docs":{"artifact_authority_by_kind":{"deployment-manifest":"managed_evidence","site-archive":"managed_evidence"},"display_name":"OpenAdapt Documentation","id":"docs","lifecycle_scope":"public_surface","lifecycle_subject":"docs.openadapt.ai","package_index_project":null,"release_kind":"public_deployment","required_artifact_kinds":["deployment-manifest","site-archive"],"required_claim_scope":"production_documentation_deployment","source_repository":"OpenAdaptAI/openadapt-ops"},"flow":{"artifact_authority_by_kind":{"sdist":"pypi","wheel":"pypi"},"display_name":"OpenAdapt Flow","id":"flow","lifecycle_scope":"repository","lifecycle_subject":"openadapt-flow","package_index_project":"openadapt-flow","release_kind":"public_package","required_artifact_kinds":["sdist","wheel"],"required_claim_scope":"qualified_workflow_runtime_release","source_repository":"OpenAdaptAI/openadapt-flow"},"openadapt":{"artifact_authority_by_kind":{"sdist":"pypi","wheel":"pypi"},"display_name":"OpenAdapt","id":"openadapt","lifecycle_scope":"repository","lifecycle_subject":"OpenAdapt","package_index_project":"openadapt","release_kind":"public_package","required_artifact_kinds":["sdist","wheel"],"required_claim_scope":"qualified_workflow_launcher_release","source_repository":"OpenAdaptAI/OpenAdapt"}}
`

var projectionStatic = sync.OnceValue(func() map[string]any {
	v, err := parseJSON([]byte(projectionStaticJSON))
	if err != nil {
		panic("ledger: bad compiled projection table: " + err.Error())
	}
	m, _ := asObj(v)
	return m
})
