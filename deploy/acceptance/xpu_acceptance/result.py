"""The result document: building, the termination-message summary and the stdout line.

The full result goes to --out and, as one line `XPU-ACCEPT-RESULT <compact json>`, to stdout
(so `kubectl logs` yields it). The summary has the same schema with "summary": true and the
stage details trimmed to what fits in the 4096 bytes the kubelet keeps of a termination message.
"""

import json
import math
import time

SCHEMA_VERSION = "xpu.dra.dev/acceptance-result/v1"
STAGES = ["environment", "operators", "convergence", "performance", "power", "stability", "collectives"]
STDOUT_PREFIX = "XPU-ACCEPT-RESULT "
SUMMARY_LIMIT = 4096


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def clean(o):
    """O with non-finite floats replaced by None (JSON has no NaN) and tuples as lists."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    return o


def new(target, env):
    r = {"schemaVersion": SCHEMA_VERSION, "vendor": target.vendor}
    for key, var in (("image", "XPU_ACCEPT_IMAGE"), ("class", "XPU_ACCEPT_CLASS"),
                     ("node", "XPU_ACCEPT_NODE"), ("pod", "XPU_ACCEPT_POD")):
        if env.get(var):
            r[key] = env[var]
    r.update({"device": target.describe(), "startedAt": now(), "summary": False, "stages": {}})
    return r


def passed(result):
    return all(s.get("status") in ("pass", "skip") for s in result["stages"].values())


def dumps(result):
    return json.dumps(clean(result), separators=(",", ":"), allow_nan=False)


# Summary: per stage, the status, the reason and the scalar evidence; lists and objects dropped
# (a few small ones kept), longest reasons cut first until the document fits.
KEEP_SMALL = {"gate", "versions", "gemmTflops", "peakShare"}


def _trim_stage(stage, reason_len):
    out = {}
    for k, v in stage.items():
        if k == "reason" and isinstance(v, str):
            out[k] = v if len(v) <= reason_len else v[: max(0, reason_len - 3)] + "..."
        elif isinstance(v, (str, int, float, bool)) or v is None:
            out[k] = v if not isinstance(v, str) or len(v) <= 120 else v[:117] + "..."
        elif k in KEEP_SMALL and len(json.dumps(clean(v))) <= 300:
            out[k] = v
        elif isinstance(v, list):
            out[k + "Count"] = len(v)
    return out


def summary(result, limit=SUMMARY_LIMIT):
    for reason_len, detail in ((400, True), (160, True), (60, True), (60, False)):
        s = {k: v for k, v in result.items() if k != "stages"}
        s["summary"] = True
        stages = {}
        for name, st in result["stages"].items():
            stages[name] = _trim_stage(st, reason_len) if detail else {
                k: st[k] for k in ("status", "reason", "seconds") if k in st}
            if "reason" in stages[name] and len(stages[name]["reason"]) > reason_len:
                stages[name]["reason"] = stages[name]["reason"][: reason_len - 3] + "..."
        s["stages"] = stages
        text = dumps(s)
        if len(text.encode()) <= limit:
            return s
    s = {"schemaVersion": result["schemaVersion"], "vendor": result.get("vendor", ""), "summary": True,
         "stages": {n: {"status": st.get("status", "fail")} for n, st in result["stages"].items()}}
    return s


def stdout_line(result):
    return STDOUT_PREFIX + dumps(result)
