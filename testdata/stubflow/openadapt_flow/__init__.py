"""STUB openadapt_flow for the embedded helper's tests (docs/helper.md,
Test doubles).

Mirrors only the module paths and class hierarchy the helper imports. Scripted by OPENADAPT_STUBFLOW_* variables; every
message it produces carries a canary so tests can prove Flow text never
reaches a frame. Never embedded in the binary."""
import os

__version__ = os.environ.get("OPENADAPT_STUBFLOW_VERSION", "1.32.0")

if os.environ.get("OPENADAPT_STUBFLOW_IMPORT_PRINT"):
    print("stubflow: import-time print on stdout")

if os.environ.get("OPENADAPT_STUBFLOW_IMPORT_FAIL"):
    raise ImportError("stubflow: import failure CANARY-IMPORT")

CANARY = "CANARY-STUBFLOW-PHI-9d2f"
