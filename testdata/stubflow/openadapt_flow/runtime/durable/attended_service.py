"""Stub AttendedActionService. OPENADAPT_STUBFLOW_OPEN: ok (default),
value_error, timeout, launch_error."""
import os

from openadapt_flow import CANARY


class AttendedExecutorTimeout(RuntimeError):
    pass


class AttendedActionService:
    def __init__(self, deployment, *, key=None, startup_timeout_s=30.0, action_timeout_s=300.0, shutdown_timeout_s=30.0):
        self._deployment = deployment

    def __enter__(self):
        mode = os.environ.get("OPENADAPT_STUBFLOW_OPEN", "ok")
        if mode == "value_error":
            raise ValueError("attended web actions require deployment.backend.headed: true " + CANARY)
        if mode == "timeout":
            raise AttendedExecutorTimeout("startup " + CANARY)
        if mode == "launch_error":
            raise OSError("no browser " + CANARY)
        b = self._deployment.backend
        if b.kind == "web" and (not b.url or not b.headed):
            raise ValueError("attended web actions require url and headed " + CANARY)
        return self

    def execute(self, run_dir, request, *, operator, decided_by="unknown"):
        from openadapt_flow.runtime.durable.attended import execute_attended_action

        return execute_attended_action(run_dir, request, operator=operator, decided_by=decided_by, executor=self)

    def close(self):
        p = os.environ.get("OPENADAPT_STUBFLOW_LOG")
        if p:
            with open(p, "a") as f:
                f.write("service closed\n")
