"""STUB openadapt_flow.authoring: a fake F1-shaped authoring session
(flow-helper.md 12.19) for the embedded helper's authoring ops.

Flow 1.32 has no such module, so it imports only when
OPENADAPT_STUBFLOW_AUTHORING is set (otherwise it raises ImportError, as if
absent): "full" (the default when set) has admit, "no_admit" lacks it,
"noapi" exposes neither open_session nor AuthoringSession. Every call is
appended as one JSON line to OPENADAPT_STUBFLOW_AUTHORING_LOG (tests read it
to prove what reached the session, e.g. that continue_input used
record_observed and never type_text). OPENADAPT_STUBFLOW_AUTHORING_TREE picks
the observation: "small" (default), "hostile500" (500 nodes with planted
PHI), "empty". OPENADAPT_STUBFLOW_AUTHORING_CLICK=crash makes click fail
without a receipt; OPENADAPT_STUBFLOW_AUTHORING_OBSERVE=exit ends the whole
helper process inside observe (the session is gone). Never embedded in the
binary."""
import json
import os
import threading

MODE = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING", "")
if not MODE:
    raise ImportError("stubflow: openadapt_flow.authoring is absent (set OPENADAPT_STUBFLOW_AUTHORING)")

CANARY = "CANARY-STUBFLOW-PHI-9d2f"
_LOCK = threading.Lock()


def _record(call, **fields):
    path = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_LOG")
    if not path:
        return
    entry = {"call": call, "thread": threading.current_thread().name}
    entry.update(fields)
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")


class AuthoringError(Exception):
    def __init__(self, message, code):
        super().__init__(message + " " + CANARY)
        self.code = code


class CoachOnlyError(AuthoringError):
    def __init__(self):
        super().__init__("coach only backend", "COACH_ONLY")


def _tree(kind):
    if kind == "empty":
        return []
    if kind == "hostile500":
        nodes = []
        for i in range(500):
            nodes.append({
                "node_id": "n_%08x" % i,
                "role": ["button", "text_input", "evil_role"][i % 3],
                "name": ["Save", "Jane Doe jane@example.com", "MRN 1234567", "Call 555-123-4567", "Next"][i % 5],
                "automation_id": "field_%d" % i,
                "control_type": "Edit",
                "enabled": True,
                "focused": i == 1,
                "bounds": {"x": 0.1, "y": 0.1, "w": 0.2, "h": 0.05},
                "value": "SECRET-VALUE " + CANARY,
                "text": "SECRET-TEXT " + CANARY,
                "title": "Chart of Jane Doe",
                "backend_pixels": {"x": 10, "y": 20, "w": 30, "h": 40},
                "screenshot": "iVBORw0KGgo" + CANARY,
            })
        return nodes
    return [
        {"node_id": "n_0000000a", "role": "text_input", "name": "Username", "enabled": True, "focused": True,
         "bounds": {"x": 0.1, "y": 0.1, "w": 0.3, "h": 0.05}, "value": "jdoe " + CANARY},
        {"node_id": "n_0000000b", "role": "text_input", "name": "Password", "enabled": True, "focused": False,
         "bounds": {"x": 0.1, "y": 0.2, "w": 0.3, "h": 0.05}},
        {"node_id": "n_0000000c", "role": "button", "name": "Sign in", "enabled": True, "focused": False,
         "bounds": {"x": 0.1, "y": 0.3, "w": 0.1, "h": 0.05}},
    ]


class AuthoringSession:
    def __init__(self, backend, out_dir, *, backend_kind, app_url=None, headed=False):
        _record("open", backend_kind=backend_kind, app_url=app_url, headed=headed, out_dir=str(out_dir),
                backend_is_none=backend is None)
        self.backend_kind = backend_kind
        self.coach_only = backend_kind in ("windows", "rdp", "citrix")
        self.out_dir = out_dir
        self.recording = False
        self.known = set()
        self.pause = None
        self.secret_typed = {}
        self.events = []
        self.hint = None

    def _drive(self):
        if self.coach_only:
            raise CoachOnlyError()

    def observe(self):
        _record("observe")
        if os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_OBSERVE") == "exit":
            os._exit(3)
        nodes = [] if self.coach_only else _tree(os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_TREE", "small"))
        self.known = {n["node_id"] for n in nodes}
        return {
            "backend": self.backend_kind,
            "provider": "playwright_ax" if self.backend_kind == "web" else "none",
            "recording": self.recording,
            "agent_drive": not self.coach_only,
            "coach_only": self.coach_only,
            "window": {"process_name": "Chromium", "title": "Chart of Jane Doe " + CANARY,
                       "bounds": {"x": 0, "y": 0, "w": 1, "h": 1}},
            "url": "https://ehr.example/patient/1234567",
            "tree": nodes,
        }

    def start_record(self):
        _record("start_record")
        self._drive()
        self.recording = True
        return {"status": "recording", "path": str(self.out_dir)}

    def click(self, node_id=None, x=None, y=None):
        _record("click", node_id=node_id, x=x, y=y)
        self._drive()
        if os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_CLICK") == "crash":
            raise RuntimeError("the backend died mid-click " + CANARY)
        if node_id is not None and node_id not in self.known:
            raise AuthoringError("node is stale", "stale_node")
        self.events.append({"kind": "click", "node_id": node_id})
        return {"status": "ok", "backend_pixels": {"x": 1, "y": 2}}

    def type_text(self, text, param=None, node_id=None):
        _record("type_text", text=text, param=param, node_id=node_id)
        self._drive()
        self.events.append({"kind": "type", "param": param})
        return {"status": "ok", "text": text}

    def halt(self):
        _record("halt")
        self.recording = False
        return {"status": "halted"}

    def pause_for_input(self, node_id=None, param=None, secret=False):
        _record("pause_for_input", node_id=node_id, param=param, secret=secret)
        self.pause = {"node_id": node_id, "param": param, "secret": secret}
        if secret:
            self.secret_typed[param] = False
        return {"status": "paused"}

    def record_observed(self, event, param=None, secret=False, node_id=None, text=None):
        _record("record_observed", event=event, param=param, secret=secret, node_id=node_id, text=text)
        if self.pause is None:
            raise AuthoringError("no pause", "not_paused")
        if secret:
            self.secret_typed[param] = True
        self.events.append({"kind": "type", "param": param, "observed": True})
        self.pause = None
        return {"recorded": True, "value": "the person's input " + CANARY}

    def stop_record(self):
        _record("stop_record")
        self.recording = False
        return {"status": "stopped"}

    def compile(self):
        _record("compile")
        if not all(self.secret_typed.values()):
            raise AuthoringError("a secret pause was never typed", "missing_secret_type")
        return {"status": "VERIFIED", "success": True, "workflow_id": "wf_stubdraft01", "path": str(self.out_dir)}

    def set_coach(self, hint):
        _record("set_coach", hint=hint)
        self.hint = hint

    def get_coach(self):
        _record("get_coach")
        return {"hint": self.hint}

    def close(self):
        _record("close")


class _NoAdmitSession(AuthoringSession):
    admit = None


def _admit(self, confirm=None):
    _record("admit", confirm=confirm)
    return {"status": "admitted", "workflow_id": "wf_stubdraft01", "seal": "SEAL-" + CANARY}


if MODE in ("1", "full"):
    AuthoringSession.admit = _admit

if MODE == "noapi":
    del AuthoringSession
else:
    def open_session(*, out_dir, backend_kind, app_url=None, headed=False, backend=None):
        cls = _NoAdmitSession if MODE == "no_admit" else AuthoringSession
        return cls(backend, out_dir, backend_kind=backend_kind, app_url=app_url, headed=headed)
