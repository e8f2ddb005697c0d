"""Stability stage: a soak of the training loop for stability.durationSeconds.

Counts steps, errors (exceptions raised by a step; the loop goes on after each) and NaN steps
(a non-finite loss). Device health events and XIDs during the run are reported by the driver:
`xpuctl accept run` adds healthEvents and xids from the claim's status.
"""

import math
import time

import torch

from . import model as M

DIMS = {"vocab": 64, "dim": 64, "layers": 2, "heads": 4, "max_len": 64}
MAX_ERRORS_KEPT = 5


def run(ctx):
    duration = float(ctx.policy["stability"]["durationSeconds"])
    dev = ctx.target.device
    model = M.build(7, **DIMS).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batches = M.token_stream(7, DIMS["vocab"], 8, 48, 16)
    steps = errors = nan_steps = 0
    messages = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < duration or steps == 0:
        try:
            opt.zero_grad(set_to_none=True)
            loss = M.loss_of(model, batches[steps % len(batches)].to(dev))
            loss.backward()
            opt.step()
            value = float(loss.detach().to("cpu"))
            if not math.isfinite(value):
                nan_steps += 1
        except Exception as e:  # noqa: BLE001 - counted and kept as evidence
            errors += 1
            if len(messages) < MAX_ERRORS_KEPT:
                messages.append(f"step {steps}: {type(e).__name__}: {e}"[:300])
        steps += 1
    ctx.target.synchronize()
    seconds = time.monotonic() - t0
    out = {"durationSeconds": duration, "seconds": seconds, "steps": steps, "errors": errors,
           "nanSteps": nan_steps, "errorMessages": messages}
    if errors or nan_steps:
        out.update(status="fail", reason=f"{errors} errors and {nan_steps} NaN steps in {steps} steps")
    else:
        out.update(status="pass", reason=f"{steps} steps in {seconds:.1f} s without errors or NaN")
    return out
