"""Convergence stage: a tiny deterministic decoder-only model on a seeded synthetic token stream.

The model (2 layers, width 32, vocabulary 64, sequence 32, batch 8) is initialised on the CPU from
convergence.seed, trained for convergence.steps AdamW steps in fp32 on the device, and compared
with the reference curve: the same run on the CPU in fp32, computed in this process. The stage
passes when |final - reference final| / reference final <= maxFinalLossShare and no step
diverges (a NaN/Inf loss, or a loss above the reference's at that step by more than that share).
"""

import copy
import math

import torch

from . import model as M

DIMS = {"vocab": 64, "dim": 32, "layers": 2, "heads": 2, "max_len": 64}
BATCH, SEQ, LR = 8, 32, 3e-3

# Called as hook(step, model) after each backward on the device run (not the reference): the
# tests corrupt gradients through it to make the model diverge.
device_grad_hook = None


def train(model, batches, device, hook=None):
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    losses = []
    for step, b in enumerate(batches):
        opt.zero_grad(set_to_none=True)
        loss = M.loss_of(model, b.to(device))
        loss.backward()
        if hook is not None:
            hook(step, model)
        opt.step()
        losses.append(float(loss.detach().to("cpu")))
    return losses


def run(ctx):
    pol = ctx.policy["convergence"]
    steps, seed, share = int(pol["steps"]), int(pol["seed"]), float(pol["maxFinalLossShare"])
    torch.set_float32_matmul_precision("highest")
    base = M.build(seed, **DIMS)
    batches = M.token_stream(seed, DIMS["vocab"], BATCH, SEQ, steps)
    reference = train(copy.deepcopy(base), batches, torch.device("cpu"))
    loss = train(copy.deepcopy(base), batches, ctx.target.device, device_grad_hook)
    bad = [i for i, (a, r) in enumerate(zip(loss, reference)) if not math.isfinite(a) or a > r * (1 + share)]
    final, ref_final = loss[-1], reference[-1]
    delta = abs(final - ref_final) / ref_final if math.isfinite(final) else math.inf
    out = {"steps": steps, "seed": seed, "loss": loss, "referenceLoss": reference, "reference": "cpu-fp32",
           "finalLoss": final, "referenceFinalLoss": ref_final, "finalLossDelta": delta,
           "maxFinalLossShare": share, "diverged": bool(bad)}
    if bad:
        out.update(status="fail", reason=f"diverged at step {bad[0]}: loss {loss[bad[0]]:.4g}, reference "
                   f"{reference[bad[0]]:.4g} (+{share:.0%} bound) ({len(bad)} steps)")
    elif delta > share:
        out.update(status="fail", reason=f"final loss {final:.4f} is {delta:.2%} from the reference {ref_final:.4f} (> {share:.0%})")
    else:
        out.update(status="pass", reason=f"final loss {final:.4f}, reference {ref_final:.4f} ({delta:.3%}), "
                   f"from {loss[0]:.3f} in {steps} steps")
    return out
