"""STUB openadapt_flow.backends.playwright_backend: PlaywrightBackend with
Flow's launch(url, headless=True, *, record_video_dir=None) -> (backend,
close) signature. No browser: launch and close are recorded in the call log
(with OPENADAPT_FLOW_NO_AUTO_INSTALL as launch saw it).
OPENADAPT_STUBFLOW_LAUNCH=fail makes launch fail as a missing browser would.
Never embedded in the binary."""
from __future__ import annotations

import os
from typing import Any, Callable, Optional

from openadapt_flow._stublog import record

if os.environ.get("OPENADAPT_STUBFLOW_BACKENDS") == "absent":
    raise ImportError("stubflow: openadapt_flow.backends is absent")

CANARY = "CANARY-STUBFLOW-PHI-9d2f"


class PlaywrightBackend:
    def __init__(self, page: Any) -> None:
        self.page = page

    def record_observed(self, **fields):
        # Stands in for Flow's Recorder.record_observed on this backend.
        record("record_observed", **fields)

    @classmethod
    def launch(
        cls,
        url: str,
        headless: bool = True,
        *,
        record_video_dir: Optional[str] = None,
    ) -> tuple["PlaywrightBackend", Callable[[], None]]:
        record("launch", url=url, headless=headless, record_video_dir=record_video_dir,
               no_auto_install=os.environ.get("OPENADAPT_FLOW_NO_AUTO_INSTALL"))
        if os.environ.get("OPENADAPT_STUBFLOW_LAUNCH") == "fail":
            raise RuntimeError("stub: Executable doesn't exist; run playwright install " + CANARY)

        def close() -> None:
            record("backend_close", kind="web")

        return cls(object()), close
