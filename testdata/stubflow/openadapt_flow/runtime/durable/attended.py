"""Stub of runtime.durable.attended. OPENADAPT_STUBFLOW_ACT selects what
execute_attended_action does:
  ok (default)      a decision (status from the action)
  refused           AttendedActionRefused
  busy              AttendedActionBusy, nothing in flight
  busy-inflight     AttendedActionBusy with a delivery_started entry for the same key
  busy-inflight-other  ... for another key
  unreadable        AttendedActionBusy; unresolved_delivery raises
  timeout           raises AttendedExecutorTimeout
  internal          KeyError
  validation        the request model raises a ValidationError
  hang              blocks until the process exits
  slow              sleeps OPENADAPT_STUBFLOW_SLOW_S, logging start/end to OPENADAPT_STUBFLOW_LOG
  probe             decision message reports sys.path hygiene and whether a child sees fds 4/5
"""
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time

from openadapt_flow import CANARY
from openadapt_flow.runtime.durable.approval import ResumeRefused


class AttendedActionRefused(ResumeRefused):
    pass


class AttendedActionBusy(AttendedActionRefused):
    pass


class ValidationError(ValueError):
    pass


def _mode():
    return os.environ.get("OPENADAPT_STUBFLOW_ACT", "ok")


class AttendedActionRequest:
    def __init__(self, capability_digest, idempotency_key, action, disposition=None):
        if _mode() == "validation":
            raise ValidationError("bad request " + CANARY)
        if not re.match(r"^sha256:[0-9a-f]{64}$", capability_digest):
            raise ValidationError("digest " + CANARY)
        self.capability_digest = capability_digest
        self.idempotency_key = idempotency_key
        self.action = action
        self.disposition = disposition


class AttendedDecision:
    def __init__(self, **kw):
        self.decision_id = secrets.token_hex(16)
        self.report_success = None
        self.next_transition = None
        self.transition_receipt_digest = None
        self.__dict__.update(kw)


_STATUS = {"continue": "completed", "skip": "completed", "reject": "rejected",
           "teach": "needs_demonstration", "escalate": "escalated", "reconcile": "completed"}
_JOURNAL = {}
_LOCK = threading.Lock()


class _Cap:
    pause_id = "pause-1"


class AttendedActionStore:
    def __init__(self, run_dir):
        self.run_dir = run_dir

    def prior(self, request):
        with _LOCK:
            d = _JOURNAL.get((str(self.run_dir), request.idempotency_key))
        if d is not None and d.action != request.action:
            raise AttendedActionRefused("key reuse " + CANARY)
        if os.environ.get("OPENADAPT_STUBFLOW_PRIOR") == "in-flight":
            return AttendedDecision(action=request.action, status="delivery_started", message=CANARY)
        return d

    def signed_capability_for_digest(self, digest):
        return _Cap()

    def unresolved_delivery(self, pause_id):
        mode = _mode()
        if mode == "unreadable":
            raise AttendedActionRefused("journal unreadable " + CANARY)
        if mode == "busy-inflight":
            return AttendedDecision(idempotency_key=_LAST_KEY[0], status="delivery_started", message=CANARY, action="continue")
        if mode == "busy-inflight-other":
            return AttendedDecision(idempotency_key="some-other-key-000001", status="delivery_started", message=CANARY, action="continue")
        return None


_LAST_KEY = [""]


def _log(line):
    p = os.environ.get("OPENADAPT_STUBFLOW_LOG")
    if p:
        with open(p, "a") as f:
            f.write(line + "\n")


def execute_attended_action(run_dir, request, *, operator, decided_by="unknown", executor=None, key=None):
    mode = _mode()
    _LAST_KEY[0] = request.idempotency_key
    with _LOCK:
        prior = _JOURNAL.get((str(run_dir), request.idempotency_key))
    if prior is not None:
        if prior.action != request.action:
            raise AttendedActionRefused("key reuse " + CANARY)
        return prior
    if mode == "refused":
        raise AttendedActionRefused("refused " + CANARY)
    if mode in ("busy", "busy-inflight", "busy-inflight-other", "unreadable"):
        raise AttendedActionBusy("busy " + CANARY)
    if mode == "timeout":
        from openadapt_flow.runtime.durable.attended_service import AttendedExecutorTimeout

        raise AttendedExecutorTimeout("timeout " + CANARY)
    if mode == "internal":
        raise KeyError("internal " + CANARY)
    if mode == "hang":
        if os.environ.get("OPENADAPT_STUBFLOW_HANG_MARK"):
            _log("hang start")
        threading.Event().wait()
    message = "decided " + CANARY
    if mode == "slow":
        _log("start " + request.idempotency_key)
        time.sleep(float(os.environ.get("OPENADAPT_STUBFLOW_SLOW_S", "0.3")))
        _log("end " + request.idempotency_key)
    if mode == "probe":
        child = subprocess.run(
            [sys.executable, "-c",
             "import os\nout=[]\nfor fd in (4,5):\n try:\n  os.fstat(fd); out.append('open')\n except OSError:\n  out.append('closed')\nprint(','.join(out))"],
            capture_output=True, text=True, close_fds=False)
        cwd = os.path.realpath(os.getcwd())
        bad = [p for p in sys.path if p == "" or os.path.realpath(p) == cwd]
        message = json.dumps({"child_fds": child.stdout.strip(), "cwd_on_path": bool(bad),
                              "operator": operator, "decided_by": decided_by})
    d = AttendedDecision(action=request.action, status=_STATUS[request.action], message=message,
                         idempotency_key=request.idempotency_key)
    if request.action in ("continue", "skip"):
        d.report_success = True
        d.next_transition = "step_003"
        d.transition_receipt_digest = "sha256:" + "c" * 64
    with _LOCK:
        _JOURNAL[(str(run_dir), request.idempotency_key)] = d
    return d
