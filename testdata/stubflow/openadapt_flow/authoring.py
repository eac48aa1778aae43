"""STUB openadapt_flow.authoring for the embedded helper's tests.

Not Flow. Its public names and signatures are those of Flow's module
openadapt_flow/authoring.py in OpenAdaptAI/openadapt-flow at commit
b3dfd22f14af6ef23b424013fb0b55b9bf713187 (read, never copied; the Go list
flowhelper.AuthoringAPI records them and a test pins this stub to it). The
behaviour is a small fake written here: a session over a fake backend that
records every call, so tests can prove what reached Flow.

Knobs (environment):
  OPENADAPT_STUBFLOW_AUTHORING   "" the module is absent (ImportError, as on
                                 Flow 1.32); "full" the real shape; shape
                                 drifts for the helper's probe: "noapi" (no
                                 session class, no open_session), "old" (the
                                 shape this project once invented:
                                 open_session(*, out_dir, backend_kind, app_url,
                                 headed)), "no_press", "extra_required"
                                 (click takes one more required parameter),
                                 "extra_optional" (click takes one more optional
                                 keyword parameter: still accepted).
  OPENADAPT_STUBFLOW_AUTHORING_LOG    one JSON line per call (with its thread).
  OPENADAPT_STUBFLOW_AUTHORING_TREE   "small" (default), "hostile500", "empty".
  OPENADAPT_STUBFLOW_AUTHORING_CLICK  "crash": click fails without a receipt.
  OPENADAPT_STUBFLOW_AUTHORING_OBSERVE "exit": the process ends inside observe.
  OPENADAPT_STUBFLOW_AUTHORING_FIELD  what the pause target reads back in
                                 continue_input: "typed" (default), "empty",
                                 "masked" (None), "empty_once" (empty on the
                                 first continue, typed after), "odd" (a result
                                 with a reason Flow never documented).
  OPENADAPT_STUBFLOW_AUTHORING_RAISE  "METHOD:CODE": METHOD raises
                                 AuthoringError with that code ("METHOD:@FILE":
                                 the code read from FILE at each call).
Every exception message carries a canary, so tests prove Flow's text never
reaches a frame. Never embedded in the binary."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, Mapping, Optional, TypedDict

from openadapt_flow._stublog import record

MODE = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING", "")
if not MODE:
    raise ImportError("stubflow: openadapt_flow.authoring is absent (set OPENADAPT_STUBFLOW_AUTHORING)")

__all__ = [
    "COACH_ONLY",
    "NEEDS_HUMAN_ADMIT",
    "OBSERVE_SCHEMA_VERSION",
    "AdmitResult",
    "AuthoringError",
    "AuthoringSession",
    "CoachOnlyError",
    "CompileResult",
    "MissingSecretTypeError",
    "open_session",
]

CANARY = "CANARY-STUBFLOW-PHI-9d2f"
COACH_ONLY = "COACH_ONLY"
NEEDS_HUMAN_ADMIT: Literal["needs_human_admit"] = "needs_human_admit"
OBSERVE_SCHEMA_VERSION = "openadapt.authoring.observe/v1"
_DRIVE = ("web", "macos", "linux")
_COACH = ("windows", "rdp", "citrix")


class AuthoringError(RuntimeError):
    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message + " " + CANARY)
        self.code = code


class CoachOnlyError(AuthoringError):
    def __init__(self, backend_kind: str) -> None:
        super().__init__("stub: coach only " + repr(backend_kind), code=COACH_ONLY)
        self.backend_kind = backend_kind


class MissingSecretTypeError(AuthoringError):
    def __init__(self, param: str) -> None:
        super().__init__("stub: secret pause never typed " + repr(param), code="missing_secret_type")
        self.param = param


class CompileResult(TypedDict):
    status: Literal["needs_human_admit"]
    workflow_id: str
    recording_retained: bool


class AdmitResult(TypedDict, total=False):
    status: Literal["accepted"]
    workflow_id: str
    digest: str


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


def _scripted_raise(method):
    spec = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_RAISE", "")
    name, _, code = spec.partition(":")
    if code.startswith("@"):
        # The code is read from that file at each call (one helper, many codes).
        with open(code[1:], encoding="utf-8") as handle:
            code = handle.read()
    if name == method:
        raise AuthoringError("stub: scripted refusal", code=code)


class AuthoringSession:
    def __init__(
        self,
        backend: Any,
        out_dir: Path | str,
        *,
        backend_kind: str,
        app_url: Optional[str] = None,
        settle_interval_s: float = 0.1,
        settle_stable_frames: int = 2,
        settle_timeout_s: float = 3.0,
    ) -> None:
        record("open", backend=type(backend).__name__, backend_kind=backend_kind, app_url=app_url,
               out_dir=str(out_dir))
        kind = (backend_kind or "").strip().lower()
        if kind in _COACH:
            raise CoachOnlyError(backend_kind)
        if kind not in _DRIVE:
            raise AuthoringError("stub: unknown backend_kind", code="unknown_backend")
        self._backend = backend
        self._kind = kind
        self._out_dir = Path(out_dir)
        self._recording = False
        self._recording_dir = None
        self._nodes = {}
        self._last_target = None
        self._pause = None
        self._secret_params = []
        self._typed_params = set()
        self._halted = False
        self._draft = None
        self._continues = 0

    @property
    def backend_kind(self) -> str:
        return self._kind

    @property
    def recording_dir(self) -> Optional[Path]:
        return self._recording_dir

    def remember_node(self, node_id: str, backend_pixels: Mapping[str, Any]) -> None:
        record("remember_node", node_id=node_id)
        self._nodes[node_id] = dict(backend_pixels)

    def observe(self) -> dict[str, Any]:
        record("observe")
        _scripted_raise("observe")
        if os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_OBSERVE") == "exit":
            os._exit(3)
        self._not_halted()
        nodes = _tree(os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_TREE", "small"))
        for n in nodes:
            self._nodes[n["node_id"]] = {"x": 10, "y": 20, "w": 30, "h": 40}
        # Flow's own payload keys, plus what a hostile or buggy Flow might
        # leak: the helper and Go must drop the extras.
        return {
            "schema_version": OBSERVE_SCHEMA_VERSION,
            "backend": self._kind,
            "provider": {"web": "playwright_ax", "macos": "macos_ax", "linux": "linux_atspi"}[self._kind],
            "mode": "authoring",
            "agent_drive": True,
            "coach_only": False,
            "recording": self._recording,
            "tree": nodes,
            "truncated": False,
            "node_count": len(nodes),
            "window": {"process_name": "Chromium", "role": "window", "title": "Chart of Jane Doe " + CANARY,
                       "bounds": {"x": 0, "y": 0, "w": 1, "h": 1}},
            "url": "https://ehr.example/patient/1234567",
        }

    def start_record(self) -> None:
        record("start_record")
        _scripted_raise("start_record")
        self._not_halted()
        if self._recording:
            raise AuthoringError("stub: already recording", code="already_recording")
        self._recording = True

    def click(
        self,
        x: Optional[int] = None,
        y: Optional[int] = None,
        *,
        node_id: Optional[str] = None,
    ) -> None:
        record("click", x=x, y=y, node_id=node_id)
        _scripted_raise("click")
        self._require_recording()
        self._not_paused()
        if os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_CLICK") == "crash":
            raise RuntimeError("the backend died mid-click " + CANARY)
        if node_id is not None:
            if node_id not in self._nodes:
                raise AuthoringError("stub: stale node", code="stale_node")
            self._last_target = self._nodes[node_id]
            return
        if x is None or y is None:
            raise AuthoringError("stub: click needs a target", code="invalid_click")
        self._last_target = {"x": int(x), "y": int(y), "w": 0, "h": 0}

    def type_text(self, text: str, param: Optional[str] = None) -> None:
        record("type_text", text=text, param=param)
        _scripted_raise("type_text")
        self._require_recording()
        self._not_paused()
        if param:
            self._typed_params.add(param)

    def press(self, key: str) -> None:
        record("press", key=key)
        _scripted_raise("press")
        self._require_recording()
        self._not_paused()

    def pause_for_input(
        self,
        *,
        param: str,
        secret: bool = False,
        node_id: Optional[str] = None,
        backend_pixels: Optional[Mapping[str, Any]] = None,
    ) -> dict[str, Any]:
        record("pause_for_input", param=param, secret=secret, node_id=node_id,
               backend_pixels=backend_pixels is not None)
        _scripted_raise("pause_for_input")
        self._require_recording()
        self._not_paused()
        if not param:
            raise AuthoringError("stub: pause needs param", code="invalid_pause")
        if node_id is not None:
            if node_id not in self._nodes:
                raise AuthoringError("stub: stale node", code="stale_node")
            target = self._nodes[node_id]
        elif self._last_target is not None:
            target = self._last_target
        else:
            raise AuthoringError("stub: no pause target", code="missing_pause_target")
        if secret and (target["w"] <= 0 or target["h"] <= 0):
            raise AuthoringError("stub: no redact region", code="missing_redact_region")
        self._pause = {"param": param, "secret": bool(secret)}
        if secret:
            self._secret_params.append(param)
        return {"paused": True, "param": param, "secret": bool(secret)}

    def continue_input(self, *, operator_confirmed: bool = True) -> dict[str, Any]:
        record("continue_input", operator_confirmed=operator_confirmed)
        _scripted_raise("continue_input")
        self._require_recording()
        pause = self._pause
        if pause is None:
            raise AuthoringError("stub: not paused", code="not_paused")
        self._continues += 1
        field = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_FIELD", "typed")
        if field == "odd":
            return {"recorded": False, "param": pause["param"], "reason": "stub_undocumented " + CANARY}
        if field == "empty_once":
            field = "empty" if self._continues == 1 else "typed"
        text = {"typed": "the person's input " + CANARY, "empty": "", "masked": None}[field]
        if pause["secret"] and text is not None and not text:
            return {"recorded": False, "param": pause["param"], "reason": "empty_secret_field"}
        if pause["secret"] and text is None and not operator_confirmed:
            return {"recorded": False, "param": pause["param"], "reason": "unconfirmed_masked_secret"}
        if not pause["secret"] and not text:
            return {"recorded": False, "param": pause["param"],
                    "reason": "empty_field" if text == "" else "unreadable_field"}
        # Flow records the observed input on the pause target; it never types.
        self._backend.record_observed(param=pause["param"], secret=pause["secret"],
                                      has_text=not pause["secret"])
        self._typed_params.add(pause["param"])
        self._pause = None
        return {"recorded": True, "param": pause["param"]}

    def stop_record(self) -> Path:
        record("stop_record")
        _scripted_raise("stop_record")
        return self._finish()

    def halt(self) -> Optional[Path]:
        record("halt")
        self._pause = None
        if not self._recording:
            self._halted = True
            return None
        rec = self._finish()
        self._halted = True
        return rec

    def compile(
        self,
        bundle_dir: Path | str | None = None,
        *,
        name: str = "authoring",
    ) -> CompileResult:
        record("compile", bundle_dir=bundle_dir, name=name)
        _scripted_raise("compile")
        self._not_halted()
        self._not_paused()
        if self._recording:
            self._finish()
        if self._recording_dir is None:
            raise AuthoringError("stub: nothing recorded", code="not_recording")
        for param in self._secret_params:
            if param not in self._typed_params:
                raise MissingSecretTypeError(param)
        self._draft = {"status": NEEDS_HUMAN_ADMIT, "workflow_id": "wf_stubdraft01", "recording_retained": True}
        return dict(self._draft)

    def admit(self, confirm: object = None) -> AdmitResult:
        record("admit", confirm=confirm)
        _scripted_raise("admit")
        self._not_halted()
        ok = confirm is True or confirm is None or (
            isinstance(confirm, str) and confirm.strip().casefold() in ("", "ok", "yes", "true", "y"))
        if not ok:
            raise AuthoringError("stub: admit refused", code="admit_refused")
        if self._draft is None:
            raise AuthoringError("stub: compile first", code="not_compiled")
        return {"status": "accepted", "workflow_id": self._draft["workflow_id"], "digest": "sha256:" + "ab" * 32}

    def _finish(self):
        self._require_recording()
        self._pause = None
        self._recording = False
        self._recording_dir = self._out_dir / "recording"
        return self._recording_dir

    def _not_halted(self):
        if self._halted:
            raise AuthoringError("stub: halted", code="halted")

    def _require_recording(self):
        self._not_halted()
        if not self._recording:
            raise AuthoringError("stub: not recording", code="not_recording")

    def _not_paused(self):
        if self._pause is not None:
            raise AuthoringError("stub: paused", code="paused")


def open_session(
    backend: Any,
    out_dir: Path | str,
    *,
    backend_kind: str,
    app_url: Optional[str] = None,
    settle_interval_s: float = 0.1,
    settle_stable_frames: int = 2,
    settle_timeout_s: float = 3.0,
) -> AuthoringSession:
    return AuthoringSession(backend, out_dir, backend_kind=backend_kind, app_url=app_url,
                            settle_interval_s=settle_interval_s, settle_stable_frames=settle_stable_frames,
                            settle_timeout_s=settle_timeout_s)


# ---------------------------------------------------------------- drifts
# Shapes the helper's probe must refuse (or, for extra_optional, accept).

if MODE == "noapi":
    del AuthoringSession, open_session
elif MODE == "old":
    _Real = AuthoringSession

    def open_session(*, out_dir, backend_kind, app_url=None, headed=False, backend=None):  # noqa: F811
        return _Real(backend, out_dir, backend_kind=backend_kind, app_url=app_url)
elif MODE == "no_press":
    del AuthoringSession.press
elif MODE == "extra_required":
    _real_click = AuthoringSession.click

    def _click_required(self, x=None, y=None, *, node_id=None, reason):
        return _real_click(self, x, y, node_id=node_id)

    AuthoringSession.click = _click_required
elif MODE == "extra_optional":
    _real_click = AuthoringSession.click

    def _click_optional(self, x=None, y=None, *, node_id=None, button="left"):
        return _real_click(self, x, y, node_id=node_id)

    AuthoringSession.click = _click_optional
