"""Operators stage: >= 30 operators of real training and inference graphs, per dtype, against an
fp64 CPU reference.

How the reference is computed, and why torch.testing's tolerances are sound here:

* Inputs are drawn on the CPU from a seeded generator on a dyadic grid (multiples of 1/8 in a
  small range, or small integers for indices). Every such value is exact in fp32, TF32, bf16
  and fp16, so the device and the reference see the very same numbers.
* The reference is the same operator evaluated on the CPU in fp64 on those inputs.
* Because inputs are short dyadic numbers, every product and every partial sum inside matmul,
  bmm, linear, conv2d, sum/mean, cumsum, scatter_add and the AdamW moments is exact in fp32
  accumulation, in any summation order (also with TF32 inputs). A correct kernel therefore
  differs from the fp64 reference only by the final rounding to its output dtype and by the
  approximation error of its transcendental functions (exp, log, tanh/erf, rsqrt): a few units in
  the last place. torch.testing's per-dtype defaults cover that: fp32 rtol 1.3e-6 (about 11 ulp),
  bf16 1.6e-2 (about 2 ulp), fp16 1e-3 (about 1-2 ulp), atol 1e-5 each. (torch.testing chose
  those for comparing two computations of one dtype; the grid inputs remove the accumulation
  error that would otherwise make an fp32-vs-fp64 comparison fail for correct kernels.)
* A kernel that accumulates in its low-precision dtype, or computes wrongly, shows up as
  elementwise |out - ref| > atol + rtol * |ref| (torch.testing.assert_close's rule) or as a cosine
  similarity below operators.minCosineSimilarity; either fails the entry.
* Per entry we record maxAbsError = max |out - ref|, maxRelError = max |out - ref| / |ref| over
  elements with ref != 0, and cosineSimilarity = <out, ref> / (|out| |ref|) of the flattened
  tensors (1.0 when both are zero).

Silent CPU fallback is a failure: the extensions' fallback warnings (vendors.py) are errors
while an operator runs, and every output tensor must live on the device under test. An operator
the device cannot run in a dtype is an operator gap, with the framework's own error text, and
fails the stage: a model using it would not run. A dtype the device cannot run at all (a probe
matmul fails) is skipped for every operator and said so in "dtypes".

KERNELS maps each operator to the function run on the device, REFERENCES to the function run in
fp64 on the CPU (the same function unless stated); tests replace entries to inject a wrong
kernel or a fallback.
"""

import math
import time
import warnings

import torch
import torch.nn.functional as F

from . import vendors

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def grid(g, shape, lo=-2.0, hi=2.0, step=0.125):
    """Uniform draws from {lo, lo + step, ..., hi - step}: exact in every float dtype."""
    n = int(round((hi - lo) / step))
    return torch.randint(0, n, shape, generator=g).double() * step + lo


def ints(g, shape, hi):
    return torch.randint(0, hi, shape, generator=g)


def _adamw(p, grad, m, v):
    p = p.clone().requires_grad_(False)
    opt = torch.optim.AdamW([p], lr=1e-2, betas=(0.875, 0.9375), eps=1e-8, weight_decay=0.125,
                            foreach=False)
    opt.state[p] = {"step": torch.tensor(3.0), "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    p.grad = grad.clone()
    opt.step()
    return p


def _rms_norm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)


def _grad_linear(x, w, b):
    x, w, b = (t.clone().requires_grad_(True) for t in (x, w, b))
    y = F.linear(x, w, b)
    y.backward(torch.ones_like(y) * 0.5)
    return x.grad, w.grad, b.grad


def _grad_softmax(x, dy):
    x = x.clone().requires_grad_(True)
    F.softmax(x, dim=-1).backward(dy)
    return x.grad


def _grad_layer_norm(x, w, b):
    x, w, b = (t.clone().requires_grad_(True) for t in (x, w, b))
    y = F.layer_norm(x, (x.shape[-1],), w, b)
    (y * 0.25).sum().backward()
    return x.grad, w.grad, b.grad


# name -> (inputs(g) -> tuple of fp64 CPU tensors (index tensors stay integer), function).
# Values of V in attention are positive: its output is then a weighted mean without cancellation,
# so the low-precision kernels' rounding of the attention weights stays a relative error.
# Inputs are converted to the dtype under test (floating ones) and moved to the device.
def _specs():
    s = {}
    s["matmul"] = (lambda g: (grid(g, (32, 64)), grid(g, (64, 48))), torch.matmul)
    s["linear"] = (lambda g: (grid(g, (16, 64)), grid(g, (32, 64)), grid(g, (32,))), F.linear)
    s["bmm"] = (lambda g: (grid(g, (4, 16, 32)), grid(g, (4, 32, 24))), torch.bmm)
    s["baddbmm"] = (lambda g: (grid(g, (4, 16, 24)), grid(g, (4, 16, 32)), grid(g, (4, 32, 24))),
                    lambda c, a, b: torch.baddbmm(c, a, b, alpha=0.5, beta=0.25))
    s["conv2d"] = (lambda g: (grid(g, (2, 4, 10, 10)), grid(g, (8, 4, 3, 3)), grid(g, (8,))),
                   lambda x, w, b: F.conv2d(x, w, b, padding=1))
    s["softmax"] = (lambda g: (grid(g, (16, 64)),), lambda x: F.softmax(x, dim=-1))
    s["log_softmax"] = (lambda g: (grid(g, (16, 64)),), lambda x: F.log_softmax(x, dim=-1))
    s["layer_norm"] = (lambda g: (grid(g, (16, 64)), grid(g, (64,), 0.5, 1.5), grid(g, (64,))),
                       lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b))
    s["rms_norm"] = (lambda g: (grid(g, (16, 64)), grid(g, (64,), 0.5, 1.5)), _rms_norm)
    s["gelu"] = (lambda g: (grid(g, (16, 64), -4, 4),), F.gelu)
    s["silu"] = (lambda g: (grid(g, (16, 64), -4, 4),), F.silu)
    s["relu"] = (lambda g: (grid(g, (16, 64)),), F.relu)
    s["sigmoid"] = (lambda g: (grid(g, (16, 64), -4, 4),), torch.sigmoid)
    s["tanh"] = (lambda g: (grid(g, (16, 64)),), torch.tanh)
    s["exp"] = (lambda g: (grid(g, (16, 64)),), torch.exp)
    s["log"] = (lambda g: (grid(g, (16, 64), 0.125, 4),), torch.log)
    s["rsqrt"] = (lambda g: (grid(g, (16, 64), 0.125, 4),), torch.rsqrt)
    s["add"] = (lambda g: (grid(g, (16, 64)), grid(g, (16, 64))), torch.add)
    s["mul"] = (lambda g: (grid(g, (16, 64)), grid(g, (16, 64))), torch.mul)
    s["div"] = (lambda g: (grid(g, (16, 64)), grid(g, (16, 64), 0.5, 2)), torch.div)
    s["scaled_dot_product_attention"] = (
        lambda g: (grid(g, (2, 2, 16, 16), -0.5, 0.5), grid(g, (2, 2, 16, 16), -0.5, 0.5),
                   grid(g, (2, 2, 16, 16), 0.5, 1.5)),
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    s["embedding"] = (lambda g: (ints(g, (8, 16), 50), grid(g, (50, 32))), F.embedding)
    s["cross_entropy"] = (lambda g: (grid(g, (32, 50)), ints(g, (32,), 50)), F.cross_entropy)
    s["sum"] = (lambda g: (grid(g, (16, 256)),), lambda x: x.sum(dim=-1))
    s["mean"] = (lambda g: (grid(g, (16, 256)),), lambda x: x.mean(dim=-1))
    s["amax"] = (lambda g: (grid(g, (16, 256)),), lambda x: x.amax(dim=-1))
    s["var"] = (lambda g: (grid(g, (16, 256)),), lambda x: x.var(dim=-1))
    s["cumsum"] = (lambda g: (grid(g, (8, 64)),), lambda x: torch.cumsum(x, dim=-1))
    s["topk"] = (lambda g: (grid(g, (8, 64), -8, 8, 0.0625),), lambda x: torch.topk(x, 8, dim=-1).values)
    s["sort"] = (lambda g: (grid(g, (8, 64)),), lambda x: torch.sort(x, dim=-1).values)
    s["gather"] = (lambda g: (grid(g, (8, 64)), ints(g, (8, 16), 64)), lambda x, i: torch.gather(x, 1, i))
    s["scatter_add"] = (lambda g: (grid(g, (8, 16)), ints(g, (8, 64), 16), grid(g, (8, 64))),
                        lambda x, i, src: x.scatter_add(1, i, src))
    s["index_select"] = (lambda g: (grid(g, (32, 16)), ints(g, (20,), 32)),
                         lambda x, i: torch.index_select(x, 0, i))
    s["cat"] = (lambda g: (grid(g, (8, 16)), grid(g, (8, 24))), lambda a, b: torch.cat([a, b], dim=1))
    s["stack"] = (lambda g: (grid(g, (8, 16)), grid(g, (8, 16))), lambda a, b: torch.stack([a, b], dim=1))
    s["transpose_contiguous"] = (lambda g: (grid(g, (4, 8, 16)),), lambda x: x.transpose(1, 2).contiguous())
    s["where"] = (lambda g: (grid(g, (16, 32)), grid(g, (16, 32)), grid(g, (16, 32))),
                  lambda c, a, b: torch.where(c > 0, a, b))
    s["masked_fill"] = (lambda g: (grid(g, (16, 32)), grid(g, (16, 32))),
                        lambda x, m: x.masked_fill(m > 0.5, -1.5))
    s["linear_backward"] = (lambda g: (grid(g, (16, 32)), grid(g, (24, 32)), grid(g, (24,))), _grad_linear)
    s["softmax_backward"] = (lambda g: (grid(g, (16, 64)), grid(g, (16, 64))), _grad_softmax)
    s["layer_norm_backward"] = (lambda g: (grid(g, (16, 64)), grid(g, (64,), 0.5, 1.5), grid(g, (64,))),
                                _grad_layer_norm)
    s["adamw"] = (lambda g: (grid(g, (32, 16)), grid(g, (32, 16), -1, 1), grid(g, (32, 16), -0.25, 0.25),
                             grid(g, (32, 16), 0.0625, 0.5)), _adamw)
    return s


SPECS = _specs()
# Operators whose low-precision result is ill-conditioned for any kernel, so that an elementwise
# comparison with fp64 at torch.testing's tolerances would fail correct kernels: the gradient of
# a normalisation sums to zero over the row (heavy cancellation). Run in fp32 only (PyTorch's own
# OpInfo tests loosen their tolerance for these in bf16/fp16).
ONLY_FP32 = {"layer_norm_backward": "its gradient sums to zero over each row: cancellation makes "
             "low-precision results ill-conditioned; checked in fp32"}
KERNELS = {name: fn for name, (_, fn) in SPECS.items()}
REFERENCES = dict(KERNELS)


def _flat(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def _to(t, dtype, device):
    return t.to(device=device, dtype=dtype) if t.is_floating_point() else t.to(device)


def compare(out, ref):
    """maxAbsError, maxRelError, cosineSimilarity and the elementwise |out-ref| excess ratio."""
    a = torch.cat([t.detach().to("cpu", torch.float64).reshape(-1) for t in out])
    b = torch.cat([t.detach().to("cpu", torch.float64).reshape(-1) for t in ref])
    d = (a - b).abs()
    nz = b != 0
    rel = (d[nz] / b[nz].abs()).max().item() if nz.any() else 0.0
    na, nb = a.norm().item(), b.norm().item()
    cos = 1.0 if na == 0 and nb == 0 else (a @ b).item() / (na * nb) if na and nb else 0.0
    finite = bool(torch.isfinite(a).all())
    return {"maxAbsError": d.max().item() if d.numel() else 0.0, "maxRelError": rel,
            "cosineSimilarity": cos, "finite": finite}, d, b


def run_one(name, dtype_name, target, tol, min_cos, patterns, seed=0):
    """One operator in one dtype on the device: an entry, a gap or a fallback."""
    dtype, device = DTYPES[dtype_name], target.device
    make, _ = SPECS[name]
    inputs = make(torch.Generator().manual_seed(seed + sum(map(ord, name))))
    dev_in = [_to(t, dtype, device) for t in inputs]
    # the reference sees exactly the device's (rounded) inputs, in fp64
    ref_in = [t.to(dtype).double() if t.is_floating_point() else t for t in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        for p in patterns:
            warnings.filterwarnings("error", message=p)
        try:
            out = _flat(KERNELS[name](*dev_in))
            target.synchronize()
        except Warning as w:
            return "fallback", {"op": name, "dtype": dtype_name, "warning": str(w)}
        except Exception as e:  # noqa: BLE001 - the framework's own error is the gap's evidence
            return "gap", {"op": name, "dtype": dtype_name, "error": f"{type(e).__name__}: {e}".strip()[:500]}
    away = sorted({t.device.type for t in out if t.device.type != device.type})
    if away:
        return "fallback", {"op": name, "dtype": dtype_name,
                            "warning": f"output on {', '.join(away)}, not on the device under test ({device.type})"}
    ref = _flat(REFERENCES[name](*ref_in))
    entry = {"op": name, "dtype": dtype_name}
    if len(out) != len(ref) or any(tuple(o.shape) != tuple(r.shape) for o, r in zip(out, ref)):
        entry.update(status="fail", reason=f"shapes {[tuple(o.shape) for o in out]}, want {[tuple(r.shape) for r in ref]}",
                     maxAbsError=math.inf, maxRelError=math.inf, cosineSimilarity=0.0)
        return "entry", entry
    m, d, b = compare(out, ref)
    bound = tol["atol"] + tol["rtol"] * b.abs()
    bad = int((d > bound).sum()) if m["finite"] else d.numel()
    entry.update({k: m[k] for k in ("maxAbsError", "maxRelError", "cosineSimilarity")})
    entry["mismatched"] = bad
    entry["elements"] = int(d.numel())
    ok = bad == 0 and m["cosineSimilarity"] >= min_cos
    entry["status"] = "pass" if ok else "fail"
    if not ok:
        entry["reason"] = (f"{bad} of {d.numel()} elements outside atol {tol['atol']:g} + rtol {tol['rtol']:g} x |ref|"
                           if bad else f"cosine similarity {m['cosineSimilarity']:.6f} < {min_cos}")
    return "entry", entry


def probe_dtype(dtype, target):
    try:
        a = torch.ones(4, 4, dtype=dtype, device=target.device)
        (a @ a).sum().item()
        return None
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"[:300]


def run(ctx):
    target, policy = ctx.target, ctx.policy["operators"]
    patterns = vendors.fallback_warnings()
    entries, gaps, fallbacks, dtypes, not_run = [], [], [], {}, []
    for dname, tol in policy["tolerances"].items():
        err = probe_dtype(DTYPES[dname], target)
        dtypes[dname] = "supported" if err is None else "unsupported: " + err
        if err is not None:
            continue
        for name in SPECS:
            if dname != "fp32" and name in ONLY_FP32:
                not_run.append({"op": name, "dtype": dname, "reason": ONLY_FP32[name]})
                continue
            kind, item = run_one(name, dname, target, tol, policy["minCosineSimilarity"], patterns)
            {"entry": entries, "gap": gaps, "fallback": fallbacks}[kind].append(item)
    failed = [f"{e['op']}/{e['dtype']}" for e in entries if e["status"] != "pass"]
    problems = []
    if failed:
        problems.append(f"{len(failed)} outside tolerance: {', '.join(failed[:8])}")
    if fallbacks:
        problems.append(f"{len(fallbacks)} fell back to the CPU: {', '.join(f['op'] + '/' + f['dtype'] for f in fallbacks[:8])}")
    if gaps:
        problems.append(f"{len(gaps)} operator gaps: {', '.join(g['op'] + '/' + g['dtype'] for g in gaps[:8])}")
    out = {"status": "fail" if problems else "pass",
           "operatorCount": len({e["op"] for e in entries}), "dtypes": dtypes,
           "operators": entries, "gaps": gaps, "fallbacks": fallbacks, "notRun": not_run}
    if problems:
        out["reason"] = "; ".join(problems)
    else:
        out["reason"] = f"{len(entries)} operator/dtype entries within tolerance"
    return out


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return r, time.perf_counter() - t0
