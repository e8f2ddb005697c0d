"""python3 -m xpu_acceptance [--stages a,b] [--policy FILE] [--out FILE] [--termination-log FILE]

Runs the acceptance stages on the device torch.accelerator names (XPU_ACCEPT_DEVICE overrides),
writes the result JSON to --out and as one stdout line `XPU-ACCEPT-RESULT <json>`, the summary to
--termination-log, and exits 0 when every stage passed or was skipped, 1 when one failed, 2 on
bad arguments or policy.
"""

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass

from . import policy as P
from . import result as R


@dataclass
class Context:
    target: object
    policy: dict
    env: dict
    backend: str


def parse_stages(text):
    if not text or text.strip() == "all":
        return list(R.STAGES)
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in R.STAGES]
    if bad:
        raise ValueError(f"--stages: unknown stage(s) {', '.join(bad)} (known: {', '.join(R.STAGES)}, all)")
    return [s for s in R.STAGES if s in names]


def default_termination_log():
    p = "/dev/termination-log"
    return p if os.path.exists(p) and os.access(p, os.W_OK) else None


def run_stage(name, ctx):
    mod = importlib.import_module(f".{name}", __package__)
    t0 = time.monotonic()
    try:
        out = mod.run(ctx)
    except Exception as e:  # noqa: BLE001 - a crashing stage fails with its error as evidence
        out = {"status": "fail", "reason": f"{type(e).__name__}: {e}"[:1000],
               "traceback": traceback.format_exc()[-2000:]}
    out["seconds"] = time.monotonic() - t0
    return out


def write(path, text):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m xpu_acceptance", description=__doc__.splitlines()[2])
    ap.add_argument("--stages", default=os.environ.get("XPU_ACCEPT_STAGES", "all"))
    ap.add_argument("--policy")
    ap.add_argument("--out", default="/tmp/xpu-accept/result.json")
    ap.add_argument("--termination-log", default=None)
    a = ap.parse_args(argv)
    try:
        stages = parse_stages(a.stages)
        pol = P.from_env(a.policy)
    except (ValueError, OSError) as e:
        print(f"xpu_acceptance: {e}", file=sys.stderr)
        return 2
    import torch.distributed as dist

    from . import device

    env = dict(os.environ)
    target = device.find(env)
    ctx = Context(target=target, policy=pol, env=env,
                  backend=dist.get_default_backend_for_device(target.device) if dist.is_available() else "")
    result = R.new(target, env)
    for name in stages:
        print(f"xpu_acceptance: stage {name} ...", file=sys.stderr, flush=True)
        result["stages"][name] = run_stage(name, ctx)
        st = result["stages"][name]
        print(f"xpu_acceptance: stage {name}: {st['status']} ({st['seconds']:.1f} s) {st.get('reason', '')}",
              file=sys.stderr, flush=True)
    result["finishedAt"] = R.now()
    result = R.clean(result)
    write(a.out, json.dumps(result, indent=1, allow_nan=False) + "\n")
    term = a.termination_log or default_termination_log()
    if term:
        write(term, R.dumps(R.summary(result)))
    print(R.stdout_line(result), flush=True)
    return 0 if R.passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
