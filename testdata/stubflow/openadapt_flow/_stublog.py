"""STUB helper: the authoring stubs' call log (OPENADAPT_STUBFLOW_AUTHORING_LOG),
one JSON line per call with the calling thread's name. Not part of Flow."""
import json
import os
import threading

_LOCK = threading.Lock()


def record(call, **fields):
    path = os.environ.get("OPENADAPT_STUBFLOW_AUTHORING_LOG")
    if not path:
        return
    entry = {"call": call, "thread": threading.current_thread().name}
    entry.update(fields)
    with _LOCK, open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
