# openadapt-agent Flow-side helper (docs/helper.md). Embedded in the Go
# binary, written to a private 0700 directory and run with Flow's own
# interpreter as:  INTERP [ARG] -B flow_helper.py --in-fd 4 --out-fd 5
#
# One JSON object per line on its own pipes (fd 4 in, fd 5 out); fd 1 is the
# stderr pipe. Stdlib plus openadapt_flow only; Python 3.10-3.12 syntax.
# Exception text and Flow's messages go to stderr only; a frame never carries
# exception text.

import os
import sys

# The CWD must never be on sys.path, before any Flow import. Running a
# file puts only this private directory at sys.path[0], but an empty
# PYTHONPATH entry adds "" (the CWD).
def _scrub_sys_path():
    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    keep = []
    for entry in sys.path:
        if entry == "":
            continue
        try:
            if cwd is not None and os.path.realpath(entry) == cwd:
                continue
        except (OSError, ValueError):
            pass
        keep.append(entry)
    sys.path[:] = keep


_scrub_sys_path()

# Flow must never download a browser on its own from here (its Playwright
# launch would otherwise try): a missing browser is an error the person
# fixes, not a download in the middle of a session.
os.environ["OPENADAPT_FLOW_NO_AUTO_INSTALL"] = "1"

# fd 1 is the stderr pipe: flush line by line, because the helper leaves
# with os._exit (no buffer flush at exit).
for _stream in (sys.stdout, sys.stderr):
    try:
        _stream.reconfigure(line_buffering=True)
    except Exception:
        pass

import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

PROTOCOL = 1
MAX_FRAME = 65536
MAX_ID = 2 ** 53
MAX_PATH = 4096
MAX_MESSAGE = 4096
SUPPORTED_FLOW = re.compile(r"^1\.32\.[0-9]+$")

ATTENTION_ID = re.compile(r"^[0-9a-f]{24}$")
DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
IDEMPOTENCY_KEY = re.compile(r"^[A-Za-z0-9._:-]{16,200}$")

# Each action's single disposition (docs/attended.md, Actions).
DISPOSITIONS = {
    "continue": "completed_by_operator",
    "skip": "not_applicable",
    "reject": "rejected_by_operator",
    "teach": "teach_requested",
    "escalate": "needs_assistance",
    "reconcile": "reconciliation_requested",
}
LIVE_ACTIONS = ("continue", "skip", "reconcile")
ACT_ACTIONS = ("continue", "skip", "reject", "teach", "escalate")
TERMINAL_STATUSES = (
    "completed", "refused", "halted", "needs_demonstration", "escalated", "rejected",
)
IN_FLIGHT_STATUSES = ("prepared", "delivery_started", "delivery_uncertain")

RESERVED_OPS = (
    "attention.list",
    "attention.get",
)


def _program_sha256():
    with open(os.path.abspath(__file__), "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def log(text):
    """One line to stderr (the protected local log)."""
    try:
        sys.stderr.write("flow_helper: " + text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except Exception:
        pass


class HelperError(Exception):
    """An error frame: kind/reason only, never text."""

    def __init__(self, kind, reason, exc=None, dispatched=False):
        super().__init__(kind + "/" + str(reason))
        self.kind = kind
        self.reason = reason
        self.exc = exc
        self.dispatched = dispatched

    def frame(self):
        flow_type = None
        mro = []
        if self.exc is not None:
            flow_type = _qualname(type(self.exc))
            mro = _mro_names(self.exc)
        return {
            "kind": self.kind,
            "reason": self.reason,
            "flow_type": flow_type,
            "mro": mro,
            "dispatched": bool(self.dispatched),
        }


def _qualname(cls):
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    return (module + "." + name) if module else name


def _mro_names(exc):
    names = [_qualname(c) for c in type(exc).__mro__ if c is not object]
    return names[:16]


def _mro_has(exc, *simple_names):
    for cls in type(exc).__mro__:
        if cls.__name__ in simple_names:
            return True
    return False


def bad_request():
    return HelperError("invalid", "bad_request")


# ---------------------------------------------------------------- validation


def _check_fields(req, spec):
    """Closed schema: exactly the keys of spec (plus v, id, op), each of its
    type. spec maps name -> checker(value) -> bool."""
    for key in req:
        if key in ("v", "id", "op"):
            continue
        if key not in spec:
            raise bad_request()
    for key, check in spec.items():
        if key not in req or not check(req[key]):
            raise bad_request()


def is_str(v):
    return isinstance(v, str)


def is_bool(v):
    return isinstance(v, bool)


def is_abs_path(v):
    return (
        isinstance(v, str)
        and 0 < len(v.encode("utf-8", "surrogatepass")) <= MAX_PATH
        and "\x00" not in v
        and os.path.isabs(v)
    )


def is_abs_path_or_null(v):
    return v is None or is_abs_path(v)


def is_url_or_null(v):
    return v is None or (isinstance(v, str) and 0 < len(v) <= 8192 and "\x00" not in v)


def matches(pattern):
    # fullmatch: "$" alone would also match before a trailing newline.
    return lambda v: isinstance(v, str) and pattern.fullmatch(v) is not None


def one_of(*values):
    return lambda v: isinstance(v, str) and v in values


def drain_value(v):
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and v == v
        and 0 <= v <= 30
    )


# ---------------------------------------------------------------- identity


def local_operator():
    """5: the effective account's name, "" when unknown. Never USER/LOGNAME."""
    if os.name == "nt":
        try:
            import ctypes

            size = ctypes.c_ulong(257)
            buf = ctypes.create_unicode_buffer(257)
            if ctypes.windll.advapi32.GetUserNameW(buf, ctypes.byref(size)):
                return buf.value
        except Exception:
            pass
        return ""
    try:
        import pwd

        return pwd.getpwuid(os.geteuid()).pw_name or ""
    except Exception:
        return ""


def check_operator(claimed):
    mine = local_operator()
    if mine == "" or claimed == "":
        raise HelperError("refused", "operator_blank")
    if mine != claimed:
        raise HelperError("refused", "operator_mismatch")
    return mine


# ---------------------------------------------------------------- state


class State:
    def __init__(self):
        self.hello_done = False
        self.flow_version = None
        self.flow_supported = False
        self.flow_importable = False
        self.service = None
        self.service_lock = threading.Lock()
        self.service_opening = False
        self.closing = False
        self.key_locks = {}
        self.key_locks_guard = threading.Lock()
        # tutorial: MockMed stop callable kept until close.
        self.mockmed_stop = None

    def key_lock(self, path, key):
        with self.key_locks_guard:
            k = (str(path), key)
            lock = self.key_locks.get(k)
            if lock is None:
                lock = threading.Lock()
                self.key_locks[k] = lock
            return lock


STATE = State()


def require_flow():
    """The pinned-minor gate of attended actions, the deployment check and
    the tutorial."""
    if not STATE.flow_importable:
        raise HelperError("unavailable", "flow_not_importable")
    if not STATE.flow_supported:
        raise HelperError("unavailable", "flow_version_unsupported")


# ---------------------------------------------------------------- hello


def op_hello(req):
    _check_fields(req, {})
    caps = {
        "attended_service": False,
        "playwright": False,
        "tutorial": False,
        "authoring": False,
    }
    try:
        import openadapt_flow

        version = getattr(openadapt_flow, "__version__", None)
        if not isinstance(version, str):
            version = ""
        STATE.flow_importable = True
    except Exception as exc:
        log("import openadapt_flow failed:\n" + traceback.format_exc())
        raise HelperError("unavailable", "flow_not_importable", exc)
    STATE.flow_version = version
    # hello never refuses a version: each feature gates itself (attended
    # actions and the tutorial by the pinned minor, authoring by Flow's API;
    # docs/helper.md, Version gate). The capabilities are import facts.
    STATE.flow_supported = SUPPORTED_FLOW.match(version) is not None
    caps["attended_service"] = _importable("openadapt_flow.runtime.durable.attended_service")
    caps["playwright"] = _find_spec("playwright.sync_api")
    caps["tutorial"] = (
        _importable("openadapt_flow.tutorial")
        and _importable("openadapt_flow.mockmed.fault_server")
        and _importable("openadapt_flow.compiler")
    )
    caps["authoring"] = _authoring_module() is not None
    STATE.hello_done = True
    return {
        "protocol": PROTOCOL,
        "helper_sha256": _program_sha256(),
        "flow_version": version,
        "flow_supported": STATE.flow_supported,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "pid": os.getpid(),
        "operator": local_operator(),
        "capabilities": caps,
    }


def _importable(name):
    try:
        __import__(name)
        return True
    except Exception:
        log("import " + name + " failed:\n" + traceback.format_exc())
        return False


def _find_spec(name):
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


# ---------------------------------------------------------------- deployment


def _load_deployment(req):
    """load_deployment plus the Python agent's overrides (none turns a value
    off). Returns the effective DeploymentConfig."""
    from openadapt_flow.deployment import load_deployment

    try:
        d = load_deployment(req["deployment_config"])
    except (FileNotFoundError, ValueError) as exc:
        log("load_deployment failed:\n" + traceback.format_exc())
        raise HelperError("invalid", "deployment_config", exc)
    b = d.backend
    if req["url"] is not None:
        b = b.model_copy(update={"url": req["url"]})
    if req["headed"]:
        b = b.model_copy(update={"headed": True})
    r = d.runtime
    if req["allow_model_grounding"]:
        r = r.model_copy(update={"allow_model_grounding": True})
    return d.model_copy(update={"backend": b, "runtime": r})


DEPLOYMENT_FIELDS = {
    "deployment_config": is_abs_path,
    "url": is_url_or_null,
    "headed": is_bool,
    "allow_model_grounding": is_bool,
}


def _backend_kind(d):
    kind = str(getattr(d.backend, "kind", "") or "").strip().lower()
    return kind[:64]


def op_deployment_check(req):
    """Read-only check for doctor and serve startup: load the
    config as service.open would, open no browser."""
    _check_fields(req, DEPLOYMENT_FIELDS)
    require_flow()
    d = _load_deployment(req)
    return {
        "backend_kind": _backend_kind(d),
        "headed": bool(d.backend.headed),
        "url_present": bool(d.backend.url),
    }


def op_service_open(req):
    _check_fields(req, DEPLOYMENT_FIELDS)
    require_flow()
    with STATE.service_lock:
        if STATE.service is not None or STATE.service_opening:
            raise HelperError("invalid", "already_open")
        STATE.service_opening = True
    try:
        d = _load_deployment(req)
        from openadapt_flow.runtime.durable.attended_service import (
            AttendedActionService,
            AttendedExecutorTimeout,
        )

        try:
            svc = AttendedActionService(d).__enter__()
        except AttendedExecutorTimeout as exc:
            log("service.open timed out:\n" + traceback.format_exc())
            raise HelperError("unavailable", "executor_timeout", exc)
        except ValueError as exc:
            log("service.open refused the deployment:\n" + traceback.format_exc())
            raise HelperError("invalid", "deployment_unusable", exc)
        except HelperError:
            raise
        except Exception as exc:
            log("service.open failed:\n" + traceback.format_exc())
            raise HelperError("unavailable", "live_session", exc)
        with STATE.service_lock:
            STATE.service = svc
        return {"backend_kind": _backend_kind(d), "headed": bool(d.backend.headed)}
    finally:
        with STATE.service_lock:
            STATE.service_opening = False


# ---------------------------------------------------------------- attended


def resolve_run_dir(runs_root, attention_id):
    """6: Flow's console scan, not resolve_attention (which hides closed
    items and so Flow's idempotent replay)."""
    from pathlib import Path

    from openadapt_flow.console import data as console_data

    root = Path(runs_root)
    try:
        if root.is_symlink() or not root.is_dir():
            raise HelperError("refused", "attention_not_found")
        root = root.resolve(strict=True)
    except OSError:
        raise HelperError("refused", "attention_not_found")
    try:
        path = console_data.resolve_scanned_dir(root, attention_id, console_data._is_run_dir)
    except Exception as exc:
        log("resolve_scanned_dir failed:\n" + traceback.format_exc())
        raise HelperError("refused", "attention_not_found", exc)
    if path is None:
        raise HelperError("refused", "attention_not_found")
    return path


def decision_frame(dec):
    message = dec.message if isinstance(dec.message, str) else ""
    return {
        "decision_id": dec.decision_id,
        "action": dec.action,
        "status": dec.status,
        "message": message[:MAX_MESSAGE],
        "report_success": dec.report_success,
        "next_transition": dec.next_transition,
        "transition_receipt_digest": dec.transition_receipt_digest,
    }


def classify(exc, *, dispatched, path, request):
    """The error classification (docs/helper.md, Error model), first match
    wins. Never looks at exception text."""
    if isinstance(exc, HelperError):
        return exc
    log("attended request raised:\n" + "".join(
        traceback.format_exception(type(exc), exc, exc.__traceback__)))
    # 1.
    if _mro_has(exc, "AttendedExecutorTimeout"):
        return HelperError("uncertain", None, exc, dispatched)
    # 2. journal probe.
    if dispatched and request is not None and request.action in ("continue", "skip", "reject", "reconcile"):
        from openadapt_flow.runtime.durable.attended import AttendedActionStore

        store = AttendedActionStore(path)
        cap = None
        try:
            cap = store.signed_capability_for_digest(request.capability_digest)
        except Exception:
            cap = None
        if cap is not None:
            try:
                unresolved = store.unresolved_delivery(cap.pause_id)
            except Exception:
                unresolved = None
                if request.action in ("continue", "skip", "reconcile"):
                    return HelperError("uncertain", "journal_unreadable", exc, dispatched)
            if unresolved is not None:
                if unresolved.idempotency_key == request.idempotency_key:
                    return HelperError("uncertain", "journal_in_flight", exc, dispatched)
                return HelperError("uncertain", "pause_delivery_unresolved", exc, dispatched)
    # 3.
    if _mro_has(exc, "AttendedActionBusy", "ContinuationBusy", "DurableAuthorityBusy"):
        return HelperError("busy", None, exc, dispatched)
    # 4.
    if _mro_has(exc, "ResumeRefused"):
        return HelperError("refused", None, exc, dispatched)
    # 5.
    if not dispatched and _mro_has(exc, "ValidationError"):
        return HelperError("invalid", "bad_request", exc, dispatched)
    # 6.
    return HelperError("internal", None, exc, dispatched)


ACT_FIELDS = {
    "runs_root": is_abs_path,
    "attention_id": matches(ATTENTION_ID),
    "capability_digest": matches(DIGEST),
    "idempotency_key": matches(IDEMPOTENCY_KEY),
    "action": one_of(*ACT_ACTIONS),
    "disposition": is_str,
    "decided_by": one_of("human", "automation"),
    "operator": is_str,
}

REPLAY_FIELDS = {
    "runs_root": is_abs_path,
    "attention_id": matches(ATTENTION_ID),
    "capability_digest": matches(DIGEST),
    "idempotency_key": matches(IDEMPOTENCY_KEY),
    "action": one_of(*DISPOSITIONS.keys()),
    "disposition": is_str,
}

RECONCILE_FIELDS = {
    "runs_root": is_abs_path,
    "attention_id": matches(ATTENTION_ID),
    "capability_digest": matches(DIGEST),
    "idempotency_key": matches(IDEMPOTENCY_KEY),
    "decided_by": one_of("human", "automation"),
    "operator": is_str,
}


def _build_request(req, action):
    from openadapt_flow.runtime.durable.attended import AttendedActionRequest

    try:
        return AttendedActionRequest(
            capability_digest=req["capability_digest"],
            idempotency_key=req["idempotency_key"],
            action=action,
            disposition=DISPOSITIONS[action],
        )
    except Exception as exc:
        log("AttendedActionRequest refused the request:\n" + traceback.format_exc())
        raise HelperError("invalid", "bad_request", exc)


def _dispatch(req, action):
    """The shared body of attended.act and attended.reconcile."""
    operator = check_operator(req["operator"])
    path = resolve_run_dir(req["runs_root"], req["attention_id"])
    live = action in LIVE_ACTIONS
    with STATE.service_lock:
        svc = STATE.service
    if live and svc is None:
        raise HelperError("unavailable", "not_open")
    request = _build_request(req, action)
    dispatched = False
    with STATE.key_lock(path, req["idempotency_key"]):
        try:
            dispatched = True
            if live:
                dec = svc.execute(path, request, operator=operator, decided_by=req["decided_by"])
            else:
                from openadapt_flow.runtime.durable.attended import execute_attended_action

                dec = execute_attended_action(
                    path, request, operator=operator, decided_by=req["decided_by"])
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            raise classify(exc, dispatched=dispatched, path=path, request=request)
    return {"decision": decision_frame(dec)}


def op_attended_act(req):
    _check_fields(req, ACT_FIELDS)
    require_flow()
    action = req["action"]
    if req["disposition"] != DISPOSITIONS[action]:
        raise bad_request()
    return _dispatch(req, action)


def op_attended_reconcile(req):
    """The terminal's way out of delivery_uncertain. Live: needs the
    open service (Flow reconciles through the deployment-bound executor)."""
    _check_fields(req, RECONCILE_FIELDS)
    require_flow()
    return _dispatch(req, "reconcile")


def op_attended_replay(req):
    _check_fields(req, REPLAY_FIELDS)
    require_flow()
    action = req["action"]
    if req["disposition"] != DISPOSITIONS[action]:
        raise bad_request()
    path = resolve_run_dir(req["runs_root"], req["attention_id"])
    request = _build_request(req, action)
    from openadapt_flow.runtime.durable.attended import AttendedActionStore

    with STATE.key_lock(path, req["idempotency_key"]):
        try:
            prior = AttendedActionStore(path).prior(request)
        except Exception as exc:
            raise classify(exc, dispatched=True, path=path, request=None)
    if prior is None:
        raise HelperError("refused", "no_prior_decision")
    if prior.status in IN_FLIGHT_STATUSES:
        raise HelperError("uncertain", "journal_in_flight", None, True)
    return {"decision": decision_frame(prior)}


# ---------------------------------------------------------------- authoring
# The authoring.* ops (docs/authoring.md, Ops).
# One Flow authoring session per helper. authoring.open builds the live
# backend with Flow's own entry points (PlaywrightBackend.launch for a web
# application, build_backend for a desktop deployment) and hands it to
# Flow's open_session; a coach-only backend kind builds nothing. The
# backend, the session and every call into them live on one owner thread
# (Playwright's sync objects are thread-affine), and the backend is closed
# there too: at halt, at close, at end of input and on SIGTERM/SIGINT.
# Results carry only the fields the op's closed result allows; Go projects
# them again. No op ever returns, logs or raises text the person or the
# agent typed, and Flow's messages never leave the protected log.

AUTHORING_BACKENDS = ("web", "macos", "linux", "windows", "rdp", "citrix")
AUTHORING_COACH_ONLY = ("windows", "rdp", "citrix")
# Flow's AuthoringError.code (case-folded) -> the closed reason of the
# refusal. A code Flow adds later is AUTHORING_UNKNOWN_CODE.
AUTHORING_FLOW_CODES = {
    "coach_only": "coach_only",
    "stale_node": "stale_node",
    "paused": "in_flight",
    "not_recording": "not_recording",
    "already_recording": "already_recording",
    "not_paused": "not_paused",
    "missing_secret_type": "missing_secret_type",
    "missing_pause_target": "missing_pause_target",
    "missing_redact_region": "missing_redact_region",
    "invalid_click": "invalid_arguments",
    "invalid_pause": "invalid_arguments",
    "invalid_backend_pixels": "invalid_arguments",
    "halted": "halted",
    "admit_refused": "admit_refused",
    "not_compiled": "not_compiled",
    "unknown_backend": "session_refused",
}
AUTHORING_UNKNOWN_CODE = "session_refused"
# continue_input's reasons for recording nothing (the pause stays open).
CONTINUE_REASONS = ("empty_secret_field", "unconfirmed_masked_secret", "empty_field", "unreadable_field")
CONTINUE_UNKNOWN_REASON = "not_recorded"
NODE_ID = re.compile(r"^n_[0-9a-f]{8}$")
PARAM = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
WORKFLOW_ID = re.compile(r"^wf_[A-Za-z0-9_-]{8,64}$")
# press: named non-printable keys only, optionally with modifiers, each
# modifier at most once; never a printable character.
PRESS_KEY = re.compile(
    r"^(?:(?:Control|Alt|Meta|Shift)\+){0,4}"
    r"(?:Enter|Tab|Escape|Backspace|Delete|ArrowUp|ArrowDown|ArrowLeft|ArrowRight|Home|End|PageUp|PageDown"
    r"|F[1-9]|F1[0-2])$"
)
OBSERVE_KEYS = ("backend", "provider", "recording", "agent_drive", "coach_only", "truncated")
NODE_KEYS = ("node_id", "role", "control_type", "class_name", "automation_id", "name", "enabled", "focused")
MAX_TREE = 200
MAX_LABEL = 200
API_KINDS = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD")
API_MODULE = re.compile(r"^openadapt_flow(\.[a-z_][a-z0-9_]*){0,4}$")
API_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,3}$")
API_PARAM = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_API = 64
MAX_MISMATCHED = 32


def is_press_key(v):
    if not isinstance(v, str) or PRESS_KEY.fullmatch(v) is None:
        return False
    mods = v.split("+")[:-1]
    return len(mods) == len(set(mods))


class AuthoringState:
    def __init__(self):
        self.lock = threading.Lock()
        self.opening = False
        self.opened = False
        self.session = None
        self.coach_only = False
        self.backend_kind = None
        self.owner = None  # ThreadPoolExecutor(max_workers=1)
        self.close_backend = None  # Flow's close of the live backend, until called
        self.paused = None  # {"node_id", "param", "secret"} while a pause is open
        self.hint = None
        self.last = None  # (tool, result) of the last op the session answered


AUTHORING = AuthoringState()


def require_importable():
    """Authoring gates itself by Flow's API, not its version."""
    if not STATE.flow_importable:
        raise HelperError("unavailable", "flow_not_importable")


def _authoring_module():
    """openadapt_flow.authoring when it imports; else None. An import, not
    find_spec: a module that is present but unusable is not a session."""
    if not _find_spec("openadapt_flow.authoring"):
        return None
    try:
        import openadapt_flow.authoring as mod
    except Exception:
        log("import openadapt_flow.authoring failed:\n" + traceback.format_exc())
        return None
    return mod


def _is_api(v):
    """The probe's request: the recorded list of entry points."""
    if not isinstance(v, list) or not 0 < len(v) <= MAX_API:
        return False
    for entry in v:
        if not isinstance(entry, dict) or set(entry) != {"module", "name", "params"}:
            return False
        if not (isinstance(entry["module"], str) and API_MODULE.fullmatch(entry["module"])):
            return False
        if not (isinstance(entry["name"], str) and API_NAME.fullmatch(entry["name"])):
            return False
        params = entry["params"]
        if not isinstance(params, list) or len(params) > 32:
            return False
        for p in params:
            if not isinstance(p, dict) or set(p) != {"name", "kind", "default"}:
                return False
            if not (isinstance(p["name"], str) and API_PARAM.fullmatch(p["name"])):
                return False
            if p["kind"] not in API_KINDS or not isinstance(p["default"], bool):
                return False
    return True


def _signature_fits(actual, expected):
    """Flow's signature fits the recorded one: the positional parameters
    exactly (names, kinds, whether each has a default), every recorded
    keyword-only parameter with the same default presence, and any extra
    parameter Flow added only as an optional keyword (or **kwargs)."""
    import inspect

    def shape(p):
        return (p.name, p.kind.name, p.default is not inspect.Parameter.empty)

    have = [shape(p) for p in actual]
    want = [(p["name"], p["kind"], p["default"]) for p in expected]
    positional = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL")
    if [s for s in have if s[1] in positional] != [s for s in want if s[1] in positional]:
        return False
    have_kw = {s[0]: s for s in have if s[1] == "KEYWORD_ONLY"}
    want_kw = {s[0]: s for s in want if s[1] == "KEYWORD_ONLY"}
    for name, s in want_kw.items():
        if have_kw.get(name) != s:
            return False
    for name, s in have_kw.items():
        if name not in want_kw and not s[2]:
            return False
    has_var_kw = any(s[1] == "VAR_KEYWORD" for s in have)
    if any(s[1] == "VAR_KEYWORD" for s in want) and not has_var_kw:
        return False
    return True


def _api_fits(entry):
    import importlib
    import inspect

    try:
        obj = importlib.import_module(entry["module"])
    except Exception:
        log("import " + entry["module"] + " failed:\n" + traceback.format_exc())
        return False
    for part in entry["name"].split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    if not callable(obj):
        return False
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return False
    return _signature_fits(list(sig.parameters.values()), entry["params"])


def op_authoring_probe(req):
    """Whether openadapt_flow.authoring imports, and which recorded entry
    points (names from the request, never Flow's text) are missing or have
    another shape."""
    _check_fields(req, {"api": _is_api})
    require_importable()
    importable = _authoring_module() is not None
    mismatched = []
    for entry in req["api"]:
        if not _api_fits(entry):
            mismatched.append(entry["name"])
    return {"importable": importable, "mismatched": mismatched[:MAX_MISMATCHED]}


def _on_owner(fn):
    """Run fn on the session's owner thread and return its result."""
    owner = AUTHORING.owner
    if owner is None:
        raise HelperError("invalid", "not_open")
    return owner.submit(fn).result()


def _reason_of(exc):
    """The closed reason of a Flow authoring refusal, or None when exc is
    not one (Flow's AuthoringError carries a str code; its message is never
    read)."""
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not _mro_has(exc, "AuthoringError"):
        return None
    return AUTHORING_FLOW_CODES.get(code.strip().lower(), AUTHORING_UNKNOWN_CODE)


def _refuse_coach_only():
    if AUTHORING.coach_only:
        raise HelperError("refused", "coach_only")


def _session_call(method, *, dispatched_on_error=False, quiet=False, **kwargs):
    """Call session.method on the owner thread. A refusal the session
    raises (an AuthoringError) becomes refused/<reason>; anything else is
    internal, or uncertain when the call may already have acted
    (dispatched_on_error)."""
    _refuse_coach_only()
    sess = AUTHORING.session
    if sess is None:
        raise HelperError("invalid", "not_open")
    fn = getattr(sess, method, None)
    if not callable(fn):
        raise HelperError("unavailable", "authoring_unavailable")

    def run():
        return fn(**kwargs)

    try:
        return _on_owner(run)
    except HelperError:
        raise
    except Exception as exc:
        reason = _reason_of(exc)
        if reason is not None:
            log("authoring " + method + " refused: " + _qualname(type(exc)) + " " + reason)
            raise HelperError("refused", reason, exc)
        if quiet:
            # The message or traceback could hold the typed text.
            log("authoring " + method + " failed: " + _qualname(type(exc)))
        else:
            log("authoring " + method + " failed:\n" + traceback.format_exc())
        if dispatched_on_error:
            raise HelperError("uncertain", None, exc, True)
        raise HelperError("internal", None, exc)


def _int_or_null(v):
    return v is None or (type(v) is int and -(2 ** 31) <= v < 2 ** 31)


def _str_or_null(pattern):
    return lambda v: v is None or (isinstance(v, str) and pattern.fullmatch(v) is not None)


def _authoring_params(req):
    """The session's (backend_kind, url, headed, deployment). With
    deployment_config they come from Flow's own load_deployment of that
    file, with the server's --url / --headed applied as service.open applies
    them (neither ever turns a value off); without it, from the request. A
    web backend needs a URL and a visible browser: the person signs in
    there."""
    path = req["deployment_config"]
    d = None
    if path is None:
        if req["backend_kind"] is None:
            raise bad_request()
        kind, url, headed = req["backend_kind"], req["url"], req["headed"]
    else:
        if req["backend_kind"] is not None:
            raise bad_request()
        d = _load_deployment({"deployment_config": path, "url": req["url"], "headed": req["headed"],
                              "allow_model_grounding": False})
        kind = _backend_kind(d)
        if kind not in AUTHORING_BACKENDS:
            raise HelperError("invalid", "deployment_unusable")
        url = getattr(d.backend, "url", None) if kind == "web" else None
        if url is not None and not is_url_or_null(url):
            raise HelperError("invalid", "deployment_unusable")
        headed = bool(getattr(d.backend, "headed", False))
    if kind == "web" and not url:
        raise HelperError("invalid", "url_missing")
    if kind == "web" and not headed:
        raise HelperError("invalid", "headed_missing")
    return kind, url, headed, d


def _build_backend(kind, url, headed, deployment):
    """The live backend through Flow's own entry points: (backend, close).
    Runs on the owner thread. Flow never downloads a browser here
    (OPENADAPT_FLOW_NO_AUTO_INSTALL is set for the whole process)."""
    if kind == "web":
        from openadapt_flow.backends.playwright_backend import PlaywrightBackend

        backend, close = PlaywrightBackend.launch(url, headless=not headed)
        return backend, close
    from openadapt_flow.backends.factory import build_backend

    try:
        backend = build_backend(deployment.backend)
    except ValueError as exc:
        # Flow cannot build this kind here: an explicit unsupported backend.
        raise HelperError("invalid", "deployment_unusable", exc)
    close = getattr(backend, "close", None)
    return backend, (close if callable(close) else None)


def _close_backend_on_owner():
    """Call Flow's close of the live backend once (on the owner thread)."""
    close, AUTHORING.close_backend = AUTHORING.close_backend, None
    if close is not None:
        try:
            close()
        except Exception:
            log("authoring backend close failed:\n" + traceback.format_exc())


def op_authoring_open(req):
    _check_fields(req, {
        "deployment_config": is_abs_path_or_null,
        "backend_kind": lambda v: v is None or v in AUTHORING_BACKENDS,
        "url": is_url_or_null,
        "headed": is_bool,
        "out_dir": is_abs_path,
    })
    require_importable()
    mod = _authoring_module()
    if mod is None or not callable(getattr(mod, "open_session", None)):
        raise HelperError("unavailable", "authoring_unavailable")
    kind, url, headed, deployment = _authoring_params(req)
    with AUTHORING.lock:
        if AUTHORING.opened or AUTHORING.opening:
            raise HelperError("invalid", "already_open")
        AUTHORING.opening = True
    try:
        if kind in AUTHORING_COACH_ONLY:
            # Coach-only: nothing that drives is built, and no session.
            with AUTHORING.lock:
                AUTHORING.opened, AUTHORING.coach_only, AUTHORING.backend_kind = True, True, kind
            return {"backend_kind": kind, "headed": headed, "coach_only": True, "admit": False}
        if deployment is None and kind != "web":
            # The local window is Flow's desktop backend of a deployment
            # config: without --config there is nothing to build it from.
            raise HelperError("invalid", "deployment_unusable")
        owner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="openadapt-authoring")

        def build():
            import pathlib

            backend, close = _build_backend(kind, url, headed, deployment)
            try:
                return mod.open_session(backend, pathlib.Path(req["out_dir"]), backend_kind=kind, app_url=url), close
            except BaseException:
                if close is not None:
                    try:
                        close()
                    except Exception:
                        log("authoring backend close failed:\n" + traceback.format_exc())
                raise

        try:
            sess, close = owner.submit(build).result()
        except HelperError:
            owner.shutdown(wait=False)
            raise
        except Exception as exc:
            owner.shutdown(wait=False)
            log("authoring.open failed:\n" + traceback.format_exc())
            reason = _reason_of(exc)
            if reason == "coach_only":
                raise HelperError("refused", "coach_only", exc)
            if reason is not None:
                raise HelperError("invalid", "deployment_unusable", exc)
            raise HelperError("unavailable", "authoring_unavailable", exc)
        with AUTHORING.lock:
            AUTHORING.session, AUTHORING.owner, AUTHORING.close_backend = sess, owner, close
            AUTHORING.opened, AUTHORING.backend_kind = True, kind
        return {"backend_kind": kind, "headed": headed, "coach_only": False,
                "admit": callable(getattr(sess, "admit", None))}
    finally:
        with AUTHORING.lock:
            AUTHORING.opening = False


def _label(v):
    if isinstance(v, str) and len(v) <= MAX_LABEL:
        return v
    return None


def _bounds(v):
    if not isinstance(v, dict):
        return None
    out = {}
    for k in ("x", "y", "w", "h"):
        n = v.get(k)
        if isinstance(n, bool) or not isinstance(n, (int, float)) or n != n or n in (float("inf"), float("-inf")):
            return None
        out[k] = n
    return out


def op_authoring_observe(req):
    """The session's observation, allowlisted (Go builds observe/v1)."""
    _check_fields(req, {})
    raw = _session_call("observe")
    if not isinstance(raw, dict):
        raw = {}
    out = {}
    for k in OBSERVE_KEYS:
        v = raw.get(k)
        if k in ("backend", "provider"):
            out[k] = v if isinstance(v, str) and len(v) <= 32 else None
        else:
            out[k] = v if isinstance(v, bool) else None
    window = raw.get("window")
    out["window"] = None
    if isinstance(window, dict):
        out["window"] = {"process_name": _label(window.get("process_name")), "bounds": _bounds(window.get("bounds"))}
    tree = raw.get("tree")
    nodes = []
    if isinstance(tree, list):
        for item in tree:
            if len(nodes) == MAX_TREE:
                out["truncated"] = True
                break
            if not isinstance(item, dict):
                continue
            node = {k: _label(item.get(k)) for k in NODE_KEYS if k not in ("enabled", "focused")}
            node["enabled"] = item.get("enabled") if isinstance(item.get("enabled"), bool) else None
            node["focused"] = item.get("focused") if isinstance(item.get("focused"), bool) else None
            node["bounds"] = _bounds(item.get("bounds"))
            nodes.append(node)
    out["tree"] = nodes
    return out


def op_authoring_start_record(req):
    _check_fields(req, {})
    _session_call("start_record")
    return {"status": "recording"}


def op_authoring_click(req):
    _check_fields(req, {"node_id": _str_or_null(NODE_ID), "x": _int_or_null, "y": _int_or_null})
    has_node = req["node_id"] is not None
    has_point = req["x"] is not None and req["y"] is not None
    if has_node == has_point or ((req["x"] is None) != (req["y"] is None)):
        raise bad_request()
    kwargs = {"node_id": req["node_id"]} if has_node else {"x": req["x"], "y": req["y"]}
    _session_call("click", dispatched_on_error=True, **kwargs)
    return {"status": "ok"}


def op_authoring_halt(req):
    """Flow's halt (it finishes an open recording), then the live backend
    is closed: a halted session never drives again."""
    _check_fields(req, {})
    _refuse_coach_only()
    sess = AUTHORING.session
    if sess is None:
        raise HelperError("invalid", "not_open")

    def run():
        try:
            return sess.halt()
        finally:
            _close_backend_on_owner()

    try:
        _on_owner(run)
    except HelperError:
        raise
    except Exception as exc:
        reason = _reason_of(exc)
        if reason is not None:
            raise HelperError("refused", reason, exc)
        log("authoring halt failed:\n" + traceback.format_exc())
        raise HelperError("internal", None, exc)
    AUTHORING.paused = None
    return {"status": "halted"}


def op_authoring_type(req):
    """Agent-driven typing (local stdio only), into what has the focus
    (click first). The text goes to the session and nowhere else: not the
    result, not the log, not an error."""
    _check_fields(req, {
        "text": lambda v: isinstance(v, str) and 0 < len(v) <= 4096,
        "param": _str_or_null(PARAM),
    })
    _session_call("type_text", dispatched_on_error=True, quiet=True, text=req["text"], param=req["param"])
    return {"status": "ok"}


def op_authoring_press(req):
    """One named key or chord (local stdio only); never a printable key."""
    _check_fields(req, {"key": is_press_key})
    _session_call("press", dispatched_on_error=True, key=req["key"])
    return {"status": "ok"}


def op_authoring_pause_for_input(req):
    _check_fields(req, {"node_id": _str_or_null(NODE_ID), "param": matches(PARAM), "secret": is_bool})
    _session_call("pause_for_input", param=req["param"], secret=req["secret"], node_id=req["node_id"])
    AUTHORING.paused = {"node_id": req["node_id"], "param": req["param"], "secret": req["secret"]}
    return {"status": "paused"}


def op_authoring_continue_input(req):
    """Flow records what the person typed during the pause on the pause
    target (record_observed), never by typing it: while this runs the
    session's type_text and press raise. operator_confirmed is this
    project's: true only after the person confirmed. Recording nothing
    (an empty or unreadable field) keeps the pause open."""
    _check_fields(req, {"operator_confirmed": is_bool})
    _refuse_coach_only()
    sess = AUTHORING.session
    if sess is None:
        raise HelperError("invalid", "not_open")

    def forbidden(*_a, **_k):
        raise RuntimeError("continue_input must not type")

    def run():
        saved = {}
        for name in ("type_text", "press"):
            if hasattr(sess, "__dict__"):
                saved[name] = sess.__dict__.get(name)
                setattr(sess, name, forbidden)
        try:
            return sess.continue_input(operator_confirmed=req["operator_confirmed"])
        finally:
            for name, original in saved.items():
                if original is not None:
                    setattr(sess, name, original)
                else:
                    try:
                        delattr(sess, name)
                    except AttributeError:
                        pass

    try:
        res = _on_owner(run)
    except HelperError:
        raise
    except Exception as exc:
        reason = _reason_of(exc)
        if reason is not None:
            raise HelperError("refused", reason, exc)
        log("authoring continue_input failed:\n" + traceback.format_exc())
        raise HelperError("internal", None, exc)
    if not isinstance(res, dict) or not isinstance(res.get("recorded"), bool):
        log("authoring continue_input answered an unknown shape")
        raise HelperError("internal", None)
    if res["recorded"]:
        AUTHORING.paused = None
        return {"recorded": True, "reason": None}
    reason = res.get("reason")
    if reason not in CONTINUE_REASONS:
        reason = CONTINUE_UNKNOWN_REASON
    return {"recorded": False, "reason": reason}


def op_authoring_stop_record(req):
    _check_fields(req, {})
    _session_call("stop_record")
    return {"status": "stopped"}


def op_authoring_compile(req):
    """compile never reports VERIFIED or success: the draft needs a human
    admit. Flow refuses a secret pause that was never typed."""
    _check_fields(req, {})
    raw = _session_call("compile")
    if not isinstance(raw, dict) or raw.get("status") != "needs_human_admit":
        log("authoring compile answered an unknown shape")
        raise HelperError("internal", None)
    wid = raw.get("workflow_id")
    return {"workflow_id": wid if isinstance(wid, str) and WORKFLOW_ID.fullmatch(wid) else None}


def op_authoring_admit(req):
    """The person's one-token admit (Go has already checked the token and
    asked the person). Flow records the local acceptance; nothing is
    minted, no Seal, no ledger row."""
    _check_fields(req, {"confirm": lambda v: v is None or isinstance(v, (str, bool))})
    _refuse_coach_only()
    if not callable(getattr(AUTHORING.session, "admit", None)):
        raise HelperError("unavailable", "authoring_unavailable")
    raw = _session_call("admit", confirm=req["confirm"])
    if not isinstance(raw, dict) or raw.get("status") != "accepted":
        log("authoring admit answered an unknown shape")
        raise HelperError("internal", None)
    wid = raw.get("workflow_id")
    return {"workflow_id": wid if isinstance(wid, str) and WORKFLOW_ID.fullmatch(wid) else None}


def _require_session():
    _refuse_coach_only()
    if AUTHORING.session is None:
        raise HelperError("invalid", "not_open")


def op_authoring_set_coach(req):
    """The coach hint is this helper's (Flow's session has none)."""
    _check_fields(req, {"hint": lambda v: isinstance(v, str) and 0 < len(v) <= 80})
    _require_session()
    AUTHORING.hint = req["hint"]
    return {"status": "ok"}


def op_authoring_get_coach(req):
    _check_fields(req, {})
    _require_session()
    hint = AUTHORING.hint
    return {"hint": hint if isinstance(hint, str) and len(hint) <= MAX_LABEL else None}


def authoring_close():
    """Close the live backend at shutdown, on the owner thread. Returns
    whether a backend was closed."""
    with AUTHORING.lock:
        owner = AUTHORING.owner
        had = AUTHORING.close_backend is not None
        AUTHORING.session = AUTHORING.owner = None
    if owner is None:
        return False
    try:
        owner.submit(_close_backend_on_owner).result(timeout=5)
    except Exception:
        log("authoring backend close failed:\n" + traceback.format_exc())
        had = False
    owner.shutdown(wait=False)
    return had


def _remembered(tool, fn, echo=(), before=None):
    """fn as an op whose answer get_command_result reports: its result plus
    the request fields named in echo (validated ids, parameter names, the
    secret flag, the filtered hint; never text) and what before() returns
    (read before fn runs), or the refusal {"status": "error", "reason":
    code}. Ops that fail otherwise (no session, a dead or uncertain action)
    leave the last answer in place."""

    def op(req):
        extra = before() if before is not None else {}
        try:
            result = fn(req)
        except HelperError as err:
            if err.kind == "refused" and isinstance(err.reason, str):
                AUTHORING.last = (tool, {"status": "error", "reason": err.reason})
            raise
        stored = {k: v for k, v in dict(result, **extra).items() if v is not None}
        for k in echo:
            if req.get(k) is not None and req.get(k) is not False:
                stored[k] = req[k]
        AUTHORING.last = (tool, stored)
        return result

    return op


def op_authoring_get_command_result(req):
    """The last command's answer (stdio runs tools synchronously and keeps
    one result): {command_id, status, retry_after_ms, result}, command_id
    being the tool's name; idle before any command."""
    _check_fields(req, {})
    if not AUTHORING.opened:
        raise HelperError("invalid", "not_open")
    last = AUTHORING.last
    if last is None:
        return {"command_id": None, "status": "idle", "retry_after_ms": 0, "result": None}
    return {"command_id": last[0], "status": "done", "retry_after_ms": 0, "result": last[1]}


def op_authoring_bind_status(req):
    """Local stdio bind status: the session lives in this helper on the
    person's computer, so it is bound without a mailbox."""
    _check_fields(req, {})
    if not AUTHORING.opened:
        raise HelperError("invalid", "not_open")
    return {"status": "stdio", "bound": True, "transport": "stdio"}


def _pause_param():
    target = AUTHORING.paused
    if target is not None and target.get("param") is not None:
        return {"param": target["param"]}
    return {}


AUTHORING_OPS = {
    "authoring.open": op_authoring_open,
    "authoring.observe": _remembered("observe", op_authoring_observe),
    "authoring.start_record": _remembered("start_record", op_authoring_start_record),
    "authoring.click": _remembered("click", op_authoring_click, ("node_id",)),
    "authoring.halt": _remembered("halt", op_authoring_halt),
    "authoring.type": _remembered("type", op_authoring_type, ("param",)),
    "authoring.press": _remembered("press", op_authoring_press, ("key",)),
    "authoring.pause_for_input": _remembered("pause_for_input", op_authoring_pause_for_input, ("param", "secret")),
    "authoring.continue_input": _remembered("continue_input", op_authoring_continue_input, before=_pause_param),
    "authoring.stop_record": _remembered("stop_record", op_authoring_stop_record),
    "authoring.compile": _remembered("compile", op_authoring_compile),
    "authoring.admit": _remembered("admit", op_authoring_admit),
    "authoring.set_coach": _remembered("set_coach", op_authoring_set_coach, ("hint",)),
    "authoring.get_coach": _remembered("get_coach", op_authoring_get_coach),
    "authoring.get_command_result": op_authoring_get_command_result,
    "authoring.bind_status": op_authoring_bind_status,
}


# ---------------------------------------------------------------- tutorial
# tutorial.prepare (docs/helper.md, Ops): Flow's own tutorial
# code (record, compile, certify) against MockMed's fault server, which this
# process keeps serving until close. Reuse needs prepared.json
# {flow_version, content_digest, helper_sha256} to match and the bundle to
# pass Flow's integrity-checked load, consequential_step and certify.
#
# Shared runs directory: preparers serialise on an exclusive lock of
# <work_dir>/prepare.lock; every live server that uses the bundle holds a
# shared lock on <work_dir>/bundle.lock until it exits, and a rebuild needs
# that lock exclusively, so a bundle in use by a live owner is never removed.
# Each server writes its own deployment-<instance>.yaml (the port differs).
#
# Progress: one frame {"id":N,"progress":{"phase":P,"elapsed_ms":T}} as each
# phase starts. On failure Go names the last phase it saw, so the phases are
# the failure vocabulary too: lock, mockmed, verify, replace, record, compile,
# certify, deployment.

import errno  # noqa: E402
import shutil  # noqa: E402
import stat  # noqa: E402

try:  # POSIX; Windows uses msvcrt and never rebuilds over an existing bundle
    import fcntl  # noqa: E402
except ImportError:  # pragma: no cover - Windows
    fcntl = None

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

INSTANCE = re.compile(r"^[0-9a-f]{16}$")
# Read once at start: a startup sweep by another server may remove this
# program's private directory while the helper runs.
TUTORIAL_HELPER_SHA256 = _program_sha256()
CONTENT_DIGEST = re.compile(r"^[0-9a-f]{64}$")
TUTORIAL_PREPARED_MAX = 65536


class _TutorialState:
    def __init__(self):
        self.lock = threading.Lock()
        self.started = False
        # Shared lock on <work_dir>/bundle.lock, held (fd open) until exit.
        self.in_use_fd = None
        self.deployment_path = None


TUTORIAL = _TutorialState()


def _is_policy_or_null(v):
    return v is None or (
        isinstance(v, str)
        and 0 < len(v.encode("utf-8", "surrogatepass")) <= MAX_PATH
        and "\x00" not in v
        and "\n" not in v
    )


def _tutorial_open_lock(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "lock is not a regular file")
    return fd


def _lock_exclusive(fd):
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    else:  # pragma: no cover - Windows
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)


def _lock_rebuild(fd):
    """Exclusive, non-blocking: fails while any live server holds it shared."""
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _lock_shared(fd):
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_SH)


def _tutorial_remove(path):
    """Remove path; never follows a symlink at or under it."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        # The fd-based rmtree (shutil.rmtree.avoids_symlink_attacks) never
        # follows links inside; a link at the root is refused.
        if not getattr(shutil.rmtree, "avoids_symlink_attacks", False):
            raise OSError(errno.EPERM, "rmtree is not symlink-safe here")
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _tutorial_write_private(path, data):
    """Temp file (0600, O_EXCL, no link following), fsync, rename, fsync dir."""
    parent = os.path.dirname(path)
    tmp = os.path.join(parent, ".%s.%d.tmp" % (os.path.basename(path), os.getpid()))
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(parent, os.O_RDONLY | _O_CLOEXEC)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _tutorial_read_json(path, limit):
    """A small regular JSON object file, or None (missing, link, FIFO, big)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except Exception:
        return None
    return value if isinstance(value, dict) else None


def _tutorial_bundle(bundle_dir):
    """Flow's integrity-checked load, then the verified manifest digest."""
    from openadapt_flow.ir import Workflow

    workflow = Workflow.load(bundle_dir)
    manifest = _tutorial_read_json(os.path.join(bundle_dir, "manifest.json"), 1 << 20)
    digest = manifest.get("content_digest") if manifest else None
    if not isinstance(digest, str) or CONTENT_DIGEST.match(digest) is None:
        raise ValueError("the tutorial bundle has no content digest")
    return workflow, digest


def op_tutorial_prepare(req):
    _check_fields(req, {
        "work_dir": is_abs_path,
        "headed": is_bool,
        "reuse": is_bool,
        "instance": matches(INSTANCE),
        "policy": _is_policy_or_null,
    })
    require_flow()
    with TUTORIAL.lock:
        if TUTORIAL.started:
            raise bad_request()  # once per helper
        TUTORIAL.started = True
    req_id = req["id"]
    started = time.monotonic()
    phase = ["lock"]

    def progress(name):
        phase[0] = name
        emit_progress(req_id, name, started)

    try:
        return _tutorial_prepare(req, progress)
    except HelperError:
        raise
    except Exception as exc:
        log("tutorial.prepare failed at %s:\n%s" % (phase[0], traceback.format_exc()))
        stop, STATE.mockmed_stop = STATE.mockmed_stop, None
        if stop is not None:
            try:
                stop()
            except Exception:
                log("MockMed stop failed:\n" + traceback.format_exc())
        raise HelperError("internal", "tutorial_failed", exc)


def _tutorial_prepare(req, progress):
    from pathlib import Path

    from openadapt_flow import tutorial as tut

    work_dir = req["work_dir"]
    headed = req["headed"]
    policy = req["policy"] if req["policy"] is not None else tut.TUTORIAL_POLICY
    helper_sha256 = TUTORIAL_HELPER_SHA256
    flow_version = STATE.flow_version

    progress("lock")
    st = os.lstat(work_dir)  # Go created it 0700; never through a link
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, "the tutorial work directory is not a directory")
    prep_fd = _tutorial_open_lock(os.path.join(work_dir, "prepare.lock"))
    try:
        _lock_exclusive(prep_fd)
        use_fd = _tutorial_open_lock(os.path.join(work_dir, "bundle.lock"))

        progress("mockmed")
        from openadapt_flow.mockmed.fault_server import serve

        base, _db, stop = serve(0, host="127.0.0.1")
        STATE.mockmed_stop = stop

        bundle_dir = os.path.join(work_dir, "bundle")
        recording_dir = os.path.join(work_dir, "recording")
        prepared_path = os.path.join(work_dir, "prepared.json")
        reused = False
        digest = None
        if req["reuse"]:
            progress("verify")
            prior = _tutorial_read_json(prepared_path, TUTORIAL_PREPARED_MAX)
            if (
                prior is not None
                and set(prior) == {"flow_version", "content_digest", "helper_sha256"}
                and prior["flow_version"] == flow_version
                and prior["helper_sha256"] == helper_sha256
            ):
                try:
                    workflow, digest = _tutorial_bundle(bundle_dir)
                    if digest != prior["content_digest"]:
                        raise ValueError("the bundle digest differs from prepared.json")
                    tut.consequential_step(workflow)
                    tut.certify_tutorial(workflow)
                    reused = True
                except Exception:
                    log("tutorial: the prepared bundle is not reusable; rebuilding:\n"
                        + traceback.format_exc())
                    digest = None
            else:
                log("tutorial: no matching prepared.json (Flow version, helper or digest); rebuilding")
        if not reused:
            progress("replace")
            try:
                if fcntl is None and os.path.lexists(bundle_dir):
                    # Windows: no shared locks, so an existing bundle is never
                    # replaced (it may be in use); remove the folder by hand.
                    raise OSError(errno.EWOULDBLOCK, "existing bundle kept")
                if fcntl is not None:
                    _lock_rebuild(use_fd)
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    log("tutorial: the prepared bundle must be rebuilt, but another live server "
                        "is using it; stop that server or use another --runs-dir")
                raise
            for path in (prepared_path, bundle_dir, recording_dir):
                _tutorial_remove(path)
            progress("record")
            tut.record_tutorial(base, Path(recording_dir), headed=headed)
            progress("compile")
            from openadapt_flow.compiler import compile_recording

            workflow = compile_recording(
                Path(recording_dir), Path(bundle_dir),
                name=tut.TUTORIAL_WORKFLOW_NAME, mine_effects=True)
            progress("certify")
            tut.consequential_step(workflow)
            tut.certify_tutorial(workflow)
            workflow, digest = _tutorial_bundle(bundle_dir)
            _tutorial_write_private(prepared_path, json.dumps(
                {"flow_version": flow_version, "content_digest": digest,
                 "helper_sha256": helper_sha256},
                sort_keys=True, separators=(",", ":")).encode("ascii") + b"\n")
        # Converts an exclusive lock; held until this process exits.
        _lock_shared(use_fd)
        TUTORIAL.in_use_fd = use_fd

        progress("deployment")
        url = base.rstrip("/") + "/" + tut.TUTORIAL_ENTRY_QUERY
        config = {
            "name": "synthetic-tutorial",
            "backend": {"kind": "web", "url": url, "headed": headed},
            "effects": {"kind": "rest", "base_url": base},
            "runtime": {"profile": "standard", "durable": True, "allow_model_grounding": False},
            "policy": {"policy": policy},
        }
        deployment = os.path.join(work_dir, "deployment-%s.yaml" % req["instance"])
        # JSON text is YAML; rewritten every start (the port changes).
        _tutorial_write_private(deployment, json.dumps(
            config, ensure_ascii=True, sort_keys=True, indent=1).encode("ascii") + b"\n")
        TUTORIAL.deployment_path = deployment
        from openadapt_flow.deployment import load_deployment

        loaded = load_deployment(deployment)
        if (
            loaded.backend.kind != "web"
            or loaded.backend.url != url
            or bool(loaded.backend.headed) != headed
            or loaded.effects.kind != "rest"
            or loaded.runtime.profile != "standard"
            or loaded.runtime.durable is not True
            or loaded.runtime.allow_model_grounding is not False
            or loaded.policy.policy != policy
        ):
            raise ValueError("the synthetic deployment config did not load back as written")
        return {
            "bundle_dir": bundle_dir,
            "base_url": base,
            "url": url,
            "deployment_config": deployment,
            "reused": reused,
            "content_digest": digest,
        }
    finally:
        os.close(prep_fd)  # releases the preparers' lock


TUTORIAL_OPS = {"tutorial.prepare": op_tutorial_prepare}


def emit_progress(req_id, phase, started):
    WRITER.write({"id": req_id, "progress": {
        "phase": phase, "elapsed_ms": int((time.monotonic() - started) * 1000)}})


# ---------------------------------------------------------------- close


def shutdown(drain_s):
    """Close sequence (docs/helper.md, Shutdown): no new requests, drain, close the service and
    MockMed. Returns the close result."""
    STATE.closing = True
    if drain_s > 0:
        POOL_TRACKER.wait_idle(drain_s)
    service_closed = False
    with STATE.service_lock:
        svc = STATE.service
        STATE.service = None
    if svc is not None:
        try:
            svc.close()
            service_closed = True
        except Exception:
            log("service.close failed:\n" + traceback.format_exc())
    try:
        authoring_close()
    except Exception:
        log("authoring close failed:\n" + traceback.format_exc())
    mockmed_stopped = False
    stop = STATE.mockmed_stop
    STATE.mockmed_stop = None
    if stop is not None:
        try:
            stop()
            mockmed_stopped = True
        except Exception:
            log("MockMed stop failed:\n" + traceback.format_exc())
    return {"service_closed": service_closed, "mockmed_stopped": mockmed_stopped}


# ---------------------------------------------------------------- transport


class Writer:
    def __init__(self, fd):
        self.fd = fd
        self.lock = threading.Lock()
        self.broken = False

    def write(self, obj):
        data = json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
        raw = data.encode("ascii")
        if len(raw) > MAX_FRAME:
            # Our own frame is too big (a huge Flow field): answer internal.
            raw = json.dumps({"v": 1, "id": obj.get("id"), "ok": False, "error": {
                "kind": "internal", "reason": None, "flow_type": None, "mro": [],
                "dispatched": bool(obj.get("error", {}).get("dispatched", False))
                if isinstance(obj.get("error"), dict) else True}},
                separators=(",", ":")).encode("ascii")
        raw += b"\n"
        with self.lock:
            if self.broken:
                return
            view = memoryview(raw)
            try:
                while view:
                    n = os.write(self.fd, view)
                    view = view[n:]
            except (BrokenPipeError, OSError):
                self.broken = True
                _hard_exit(0)


WRITER = None


class Tracker:
    def __init__(self):
        self.cond = threading.Condition()
        self.busy = 0

    def enter(self):
        with self.cond:
            self.busy += 1

    def leave(self):
        with self.cond:
            self.busy -= 1
            self.cond.notify_all()

    def wait_idle(self, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.busy > 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)


POOL_TRACKER = Tracker()

OPS = {
    "hello": op_hello,
    "service.open": op_service_open,
    "deployment.check": op_deployment_check,
    "attended.act": op_attended_act,
    "attended.replay": op_attended_replay,
    "attended.reconcile": op_attended_reconcile,
    "authoring.probe": op_authoring_probe,
}


def _hard_exit(code):
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


def _refuse_constant(name):
    raise ValueError("non-finite number")


def run_op(req_id, op, req):
    try:
        fn = OPS.get(op) or TUTORIAL_OPS.get(op) or AUTHORING_OPS.get(op)
        if fn is None:
            raise HelperError("invalid", "unknown_op")
        result = fn(req)
        WRITER.write({"v": 1, "id": req_id, "ok": True, "result": result})
    except HelperError as err:
        WRITER.write({"v": 1, "id": req_id, "ok": False, "error": err.frame()})
    except Exception as exc:
        log("op " + op + " failed:\n" + traceback.format_exc())
        WRITER.write({"v": 1, "id": req_id, "ok": False,
                      "error": HelperError("internal", None, exc, False).frame()})
    finally:
        POOL_TRACKER.leave()


def fatal_frame(reason):
    WRITER.write({"v": 1, "id": None, "ok": False, "error": {
        "kind": "invalid", "reason": reason, "flow_type": None, "mro": [],
        "dispatched": False}})
    _hard_exit(3)


def parse_args(argv):
    in_fd = out_fd = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--in-fd", "--out-fd", "--in-handle", "--out-handle") and i + 1 < len(argv):
            v = int(argv[i + 1])
            if a.startswith("--in"):
                in_fd = (a, v)
            else:
                out_fd = (a, v)
            i += 2
            continue
        raise SystemExit(2)
    if in_fd is None or out_fd is None:
        raise SystemExit(2)

    def fd_of(spec, flags):
        flag, v = spec
        if flag.endswith("handle"):
            import msvcrt

            os.set_handle_inheritable(v, False)
            return msvcrt.open_osfhandle(v, flags)
        os.set_inheritable(v, False)
        return v

    return fd_of(in_fd, os.O_RDONLY), fd_of(out_fd, os.O_WRONLY)


def _on_signal(signum, frame):
    raise SystemExit(0)


def main(argv):
    global WRITER
    in_fd, out_fd = parse_args(argv)
    WRITER = Writer(out_fd)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="flow-helper")
    buf = b""
    last_id = 0
    try:
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > MAX_FRAME:
                    fatal_frame("frame_too_large")
                chunk = os.read(in_fd, 65536)
                if not chunk:
                    break
                buf += chunk
                continue
            line, buf = buf[:nl], buf[nl + 1:]
            if len(line) > MAX_FRAME:
                fatal_frame("frame_too_large")
            try:
                req = json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
            except Exception:
                fatal_frame("bad_frame")
            if not isinstance(req, dict):
                fatal_frame("bad_frame")
            req_id = req.get("id")
            if (
                req.get("v") != 1
                or type(req_id) is not int
                or not (0 < req_id < MAX_ID)
                or req_id <= last_id
                or not isinstance(req.get("op"), str)
            ):
                fatal_frame("bad_frame")
            last_id = req_id
            op = req["op"]
            if op == "close":
                try:
                    _check_fields(req, {"drain_s": drain_value})
                except HelperError as err:
                    WRITER.write({"v": 1, "id": req_id, "ok": False, "error": err.frame()})
                    continue
                result = shutdown(float(req["drain_s"]))
                WRITER.write({"v": 1, "id": req_id, "ok": True, "result": result})
                _hard_exit(0)
            if STATE.closing:
                err = HelperError("invalid", "closing")
            elif not STATE.hello_done and op != "hello":
                err = HelperError("invalid", "hello_required")
            elif op == "hello" and STATE.hello_done:
                err = bad_request()
            else:
                err = None
            if err is not None:
                WRITER.write({"v": 1, "id": req_id, "ok": False, "error": err.frame()})
                continue
            POOL_TRACKER.enter()
            if op == "hello":
                # hello runs inline: nothing else may start before it.
                run_op(req_id, op, req)
            else:
                pool.submit(run_op, req_id, op, req)
    except SystemExit:
        pass
    except Exception:
        log("helper main loop failed:\n" + traceback.format_exc())
    # EOF on fd 4, SIGTERM/SIGINT: close with drain_s 0, no reply.
    try:
        shutdown(0)
    except BaseException:
        pass
    _hard_exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
