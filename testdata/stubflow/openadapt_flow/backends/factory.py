"""STUB openadapt_flow.backends.factory: build_backend with Flow's signature
(cfg, *, page=None, rdp_transport=None, window_client=None,
macos_client=None). It builds a fake desktop backend for kind macos or linux
(recorded in the call log; its close() is recorded too) and raises
ValueError, as Flow does, for anything it cannot build;
OPENADAPT_STUBFLOW_BUILD=refuse refuses every kind. Never embedded in the
binary."""
from __future__ import annotations

import os
from typing import Any, Optional

from openadapt_flow._stublog import record

if os.environ.get("OPENADAPT_STUBFLOW_BACKENDS") == "absent":
    raise ImportError("stubflow: openadapt_flow.backends is absent")

CANARY = "CANARY-STUBFLOW-PHI-9d2f"


class _DesktopBackend:
    def __init__(self, kind):
        self.kind = kind

    def record_observed(self, **fields):
        record("record_observed", **fields)

    def close(self):
        record("backend_close", kind=self.kind)


def build_backend(
    cfg: Any,
    *,
    page: Optional[Any] = None,
    rdp_transport: Optional[Any] = None,
    window_client: Optional[Any] = None,
    macos_client: Optional[Any] = None,
) -> Any:
    kind = (getattr(cfg, "kind", None) or "web").strip().lower()
    record("build_backend", kind=kind, page=page is not None)
    if os.environ.get("OPENADAPT_STUBFLOW_BUILD") == "refuse":
        raise ValueError("stub: backend.kind " + repr(kind) + " cannot be built here " + CANARY)
    if kind == "web" and page is None:
        raise ValueError("stub: backend.kind 'web' needs a live page " + CANARY)
    if kind in ("macos", "linux"):
        return _DesktopBackend(kind)
    raise ValueError("stub: unknown backend.kind " + repr(kind) + " " + CANARY)
