"""Fabricate a real durable attended pause in place, with Flow 1.32's own
objects: no browser. Test asset, never
embedded. Usage: flow-python make_pause.py RUNS_DIR NAME
Prints one JSON line {run_dir, attention_id, capability_digest, allowed_actions}.
HOME / OPENADAPT_DURABLE_AUTHORITY_DB must be the helper's."""
import hashlib
import json
import secrets
import sys
from pathlib import Path

from openadapt_flow.ir import (
    ActionKind, HaltObservation, Postcondition, PostconditionKind, RunReport, Step, StepResult, Workflow,
)
from openadapt_flow.runtime.durable.approval import approval_pause_digest
from openadapt_flow.runtime.durable.attended import issue_attended_capability
from openadapt_flow.runtime.durable.authority import DurableAuthority
from openadapt_flow.runtime.durable.checkpoint import CheckpointStore, PendingEscalation, RunManifest


def main(runs, name):
    runs = Path(runs).resolve()
    run = runs / name
    run.mkdir(parents=True)
    bundle = runs.parent / ("bundle-" + name)
    wf = Workflow(name="attended", steps=[
        Step(id="human", intent="finish the task", action=ActionKind.KEY, key="A",
             expect=[Postcondition(kind=PostconditionKind.TEXT_PRESENT, text="DONE")]),
        Step(id="next", intent="next", action=ActionKind.KEY, key="B"),
    ])
    wf.save(bundle)
    store = CheckpointStore(run)
    m = RunManifest(run_id=secrets.token_hex(16), workflow_name="attended",
                    bundle_dir=str(bundle.resolve()), params={})
    m = m.model_copy(update={"namespace_id": secrets.token_hex(16),
                             "canonical_run_dir": str(run.resolve())})
    store.write_fresh_manifest(m)
    d = DurableAuthority(run, store).validate(m).progress_digest
    store.write_pending(PendingEscalation(
        run_id=m.run_id, workflow_name="attended", step_index=0, step_id="human",
        intent="finish the task", category="human_required", reason="challenge",
        resume_from_index=0))
    result = StepResult(step_id="human", intent="finish the task", ok=False, error="challenge")
    RunReport(workflow_name="attended", started_at="2026-12-01T00:00:00+00:00", success=False,
              results=[result],
              halt=HaltObservation(state_id="human", intent="finish the task", reason="challenge")).save(run)
    cap = issue_attended_capability(run, store=store, pending=store.read_pending(), workflow=wf, result=result)
    DurableAuthority(run, store).advance(store.read_manifest(), expected_progress_digest=d, phase="paused",
                                         pause_binding_sha256=approval_pause_digest(store.read_pending()))
    rel = run.relative_to(runs).as_posix()
    print(json.dumps({
        "run_dir": str(run),
        "attention_id": hashlib.sha256(rel.encode()).hexdigest()[:24],
        "capability_digest": cap.digest,
        "allowed_actions": list(cap.allowed_actions),
    }))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
