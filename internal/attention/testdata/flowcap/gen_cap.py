# Produces capability vectors with real Flow 1.32.0: AttendedPauseCapability
# built and signed the way AttendedActionStore.issue does (model_dump_json
# indent=2 on disk, HMAC-SHA256 over _canonical(unsigned())), with
# adversarial strings and floats in every string field and IdentityCheck.
import hashlib, hmac, json, os, sys
import openadapt_flow
from openadapt_flow.runtime.durable.attended import AttendedPauseCapability, _canonical
from openadapt_flow.ir import IdentityCheck

out = sys.argv[1]
key = bytes(range(32))
weird = [
    'a<b>c&d \u2028 \u2029 </script>',
    'caf\u00e9 \u65e5\u672c \U0001F600 \u00ff\u0100',
    'quote" back\\ slash/ tab\t nl\n cr\r bs\b ff\f nul\x00 us\x1f del\x7f',
    '\ufeff bom-ish \ud7ff \ue000 \uffff',
    '',
]
cases = []
for sv in (1, 2, 3):
    for i, w in enumerate(weird):
        ident = IdentityCheck(status="verified", mode="structured",
                              coverage=[1.0, 0.30000000000000004, 1e-07, 1e16, 123456789.125][i],
                              expected=w, observed=weird[(i + 1) % len(weird)])
        cap = AttendedPauseCapability(
            schema_version=sv, event_sequence=1 + i, pause_id="%032x" % (i + 1),
            run_id="run-" + w, workflow_name=w, bundle_version="sha256:" + "ab" * 32,
            step_index=i, step_id="step_" + w, state_id=None if i % 2 else w,
            resume_from_index=i + 1, resume_from_step_id=None,
            pause_digest="sha256:" + "cd" * 32, expected_next_transition="<complete>",
            expected_transition_digest="sha256:" + "ef" * 32,
            program_cursor_digest=None, delivery_state="not_delivered",
            source_identity_required=bool(i % 2), source_identity=ident,
            issued_at="2026-12-02T00:00:00+00:00", expires_at="2026-12-03T00:00:00+00:00",
            allowed_actions=("reject", "teach", "escalate"),
        )
        cap.signature = "hmac-sha256:" + hmac.new(key, _canonical(cap.unsigned()), hashlib.sha256).hexdigest()
        name = "sv%d-%d.json" % (sv, i)
        with open(os.path.join(out, name), "wb") as f:
            f.write(cap.model_dump_json(indent=2).encode("utf-8"))
        cases.append({"file": name, "digest": cap.digest, "signature": cap.signature,
                      "canonical_unsigned_sha256": hashlib.sha256(_canonical(cap.unsigned())).hexdigest()})
with open(os.path.join(out, "capability.key"), "wb") as f:
    f.write(key)
json.dump({"provenance": {"generated_by": "openadapt-flow %s (real runtime /tmp/realflow)" % openadapt_flow.__version__,
                          "script": "gen_cap.py (see README)", "key": "bytes 0..31"},
           "cases": cases}, open(os.path.join(out, "expected.json"), "w"), indent=2)
print(len(cases))

# Files Flow did not write but its model still accepts with the signature
# Flow issued: pydantic normalizes them (an extra member dropped, 0.0 read
# as the int 0, the int 1 as the float 1.0, a missing member defaulted), so
# Flow's digest is the original one while the file's own canonical form
# differs. The agent computes the digest from the file as it is
# and so refuses these signatures (fail closed: no capability offered).
base = open(os.path.join(out, "sv3-0.json")).read()
variants = {
    "extra-member": base.replace('"schema_version": 3,', '"schema_version": 3,\n  "zzz_extra": 1,', 1),
    "float-for-int": base.replace('"step_index": 0,', '"step_index": 0.0,', 1),
    "int-for-float": base.replace('"coverage": 1.0,', '"coverage": 1,', 1),
    "default-omitted": base.replace('  "event_sequence": 1,\n', '', 1),
}
normalized = []
for name, text in variants.items():
    assert text != base, name
    cap = AttendedPauseCapability.model_validate_json(text)
    want = "hmac-sha256:" + hmac.new(key, _canonical(cap.unsigned()), hashlib.sha256).hexdigest()
    fname = "normalized-%s.json" % name
    with open(os.path.join(out, fname), "w") as f:
        f.write(text)
    normalized.append({"file": fname, "flow_digest": cap.digest,
                       "flow_signature_valid": hmac.compare_digest(cap.signature, want)})
exp = json.load(open(os.path.join(out, "expected.json")))
exp["normalized_by_flow"] = normalized
json.dump(exp, open(os.path.join(out, "expected.json"), "w"), indent=2)
