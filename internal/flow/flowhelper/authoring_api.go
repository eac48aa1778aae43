package flowhelper

// The public Python API of Flow that an authoring session is built and
// driven with (docs/authoring.md, "What the helper calls"). The helper's
// authoring.probe checks an installed Flow against this list at startup
// (names and signatures, never the version string), and the stub Flow in
// testdata/stubflow is pinned to it by a test, so neither can drift from
// Flow unnoticed.
//
// Provenance (read with the public code index, never copied):
// OpenAdaptAI/openadapt-flow
//   - openadapt_flow/authoring.py at b3dfd22f14af6ef23b424013fb0b55b9bf713187
//     (open_session, AuthoringSession and its methods, the error classes);
//   - openadapt_flow/backends/playwright_backend.py at
//     02665f4df4e6c65b078e357666357c2a7dea7c8a (PlaywrightBackend.launch);
//   - openadapt_flow/backends/factory.py at
//     c52a6b3d458857e194eac48f9c3da3ec5ab4b0aa (build_backend).

// Parameter kinds, as Python's inspect.Parameter names them.
const (
	ParamPositionalOnly = "POSITIONAL_ONLY"
	ParamPositional     = "POSITIONAL_OR_KEYWORD"
	ParamVarPositional  = "VAR_POSITIONAL"
	ParamKeywordOnly    = "KEYWORD_ONLY"
	ParamVarKeyword     = "VAR_KEYWORD"
)

// APIParam is one parameter of a recorded signature: its name, its kind,
// and whether it has a default (the default's value is not part of the
// shape).
type APIParam struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Default bool   `json:"default"`
}

// APIEntry is one callable of Flow: the module it lives in, its dotted name
// inside that module (Class.method for a method, Class.__init__ for a
// constructor), and its parameters as inspect.signature reports them on the
// attribute (self included for a plain method, cls excluded for a
// classmethod).
type APIEntry struct {
	Module string     `json:"module"`
	Name   string     `json:"name"`
	Params []APIParam `json:"params"`
}

func pos(name string) APIParam    { return APIParam{Name: name, Kind: ParamPositional} }
func posOpt(name string) APIParam { return APIParam{Name: name, Kind: ParamPositional, Default: true} }
func kwReq(name string) APIParam  { return APIParam{Name: name, Kind: ParamKeywordOnly} }
func kwOpt(name string) APIParam  { return APIParam{Name: name, Kind: ParamKeywordOnly, Default: true} }
func self() APIParam              { return pos("self") }
func method(name string, p ...APIParam) APIEntry {
	return APIEntry{Module: authoringModule, Name: name, Params: append([]APIParam{self()}, p...)}
}

const authoringModule = "openadapt_flow.authoring"

// sessionParams are the parameters open_session and AuthoringSession share
// after (backend, out_dir).
var sessionParams = []APIParam{kwReq("backend_kind"), kwOpt("app_url"), kwOpt("settle_interval_s"),
	kwOpt("settle_stable_frames"), kwOpt("settle_timeout_s")}

// AuthoringAPI is the recorded shape of Flow's authoring entry points.
var AuthoringAPI = []APIEntry{
	{Module: authoringModule, Name: "open_session", Params: append([]APIParam{pos("backend"), pos("out_dir")}, sessionParams...)},
	{Module: authoringModule, Name: "AuthoringSession.__init__", Params: append([]APIParam{self(), pos("backend"), pos("out_dir")}, sessionParams...)},
	method("AuthoringSession.remember_node", pos("node_id"), pos("backend_pixels")),
	method("AuthoringSession.observe"),
	method("AuthoringSession.start_record"),
	method("AuthoringSession.click", posOpt("x"), posOpt("y"), kwOpt("node_id")),
	method("AuthoringSession.type_text", pos("text"), posOpt("param")),
	method("AuthoringSession.press", pos("key")),
	method("AuthoringSession.pause_for_input", kwReq("param"), kwOpt("secret"), kwOpt("node_id"), kwOpt("backend_pixels")),
	method("AuthoringSession.continue_input", kwOpt("operator_confirmed")),
	method("AuthoringSession.stop_record"),
	method("AuthoringSession.halt"),
	method("AuthoringSession.compile", posOpt("bundle_dir"), kwOpt("name")),
	method("AuthoringSession.admit", posOpt("confirm")),
	method("AuthoringError.__init__", pos("message"), kwReq("code")),
	method("CoachOnlyError.__init__", pos("backend_kind")),
	method("MissingSecretTypeError.__init__", pos("param")),
	{Module: "openadapt_flow.backends.playwright_backend", Name: "PlaywrightBackend.launch",
		Params: []APIParam{pos("url"), posOpt("headless"), kwOpt("record_video_dir")}},
	{Module: "openadapt_flow.backends.factory", Name: "build_backend",
		Params: []APIParam{pos("cfg"), kwOpt("page"), kwOpt("rdp_transport"), kwOpt("window_client"), kwOpt("macos_client")}},
}

// authoringAPINames are the entries' names, for checking the probe's
// answer (it may only name entries of the list).
func authoringAPINames() map[string]bool {
	m := make(map[string]bool, len(AuthoringAPI))
	for _, e := range AuthoringAPI {
		m[e.Name] = true
	}
	return m
}
