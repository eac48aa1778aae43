"""Flow's own anchor for bench/bundle-verify.sh: load every bundle folder
under ROOT (sorted, immediate children) with openadapt-flow's
Workflow.load(path) -- validation and integrity verification on, Flow's
defaults -- in one Python process, and print how many loaded.

Run it with a Python that can import openadapt_flow (e.g. the
bin/flow-python of the runtime OPENADAPT_REALFLOW_DIR names)."""
import os
import sys

from openadapt_flow.ir import Workflow

root = sys.argv[1]
dirs = sorted(e.path for e in os.scandir(root) if e.is_dir())
ok = 0
for d in dirs:
    Workflow.load(d)
    ok += 1
print(f"flow: {ok} bundles loaded by Workflow.load")
