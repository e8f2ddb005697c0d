"""Performance stage: training and inference throughput, GEMM TFLOP/s, memory copy bandwidth.

Sizes: batch performance.batchSize x performance.sequenceLength tokens per step; the model is a
decoder of width 1024, 8 layers (width 64, 2 layers on the CPU backend, so the self-test stays
fast). performance.warmupSteps runs of each measurement are excluded.

Timings use device events (torch.Event with timing, recorded on the current stream, read after
torch.accelerator.synchronize) where the device has them, and time.perf_counter on the CPU.

  trainTokensPerSecond   batch x seq x steps / total step time
  stepLatencyP50Ms/P99Ms nearest-rank percentiles of the per-step times
  prefillTokensPerSecond batch x seq / prefill time (one forward over the prompt, KV cache filled)
  timeToFirstTokenMs     prefill forward + choosing the first token (argmax)
  timePerOutputTokenMs   decode time / decoded steps (one token per sequence per step)
  decodeTokensPerSecond  batch x decoded steps / decode time
  gemmTflops[dtype]      2 m n k / t / 1e12 for an n x n x n matmul per dtype
  memoryCopyGBps         2 x bytes / t / 1e9 for a device-to-device copy (each byte read and
                         written, as CUDA's bandwidthTest counts it)
  peakShare              measured / peak, only when XPU_ACCEPT_PEAKS gives the device's peaks
                         as JSON: {"gemmTflops": {"bf16": 989}, "memoryCopyGBps": 4800}
"""

import json
import math
import os
import time

import torch

from . import model as M
from .operators import DTYPES, probe_dtype

BIG = {"vocab": 32000, "dim": 1024, "layers": 8, "heads": 16}
SMALL = {"vocab": 256, "dim": 64, "layers": 2, "heads": 4}


class Clock:
    """Elapsed seconds of a region: device events where the device has them, else perf_counter."""

    def __init__(self, target):
        self.target = target
        self.events = target.type != "cpu"

    def measure(self, fn):
        if self.events:
            try:
                a = torch.Event(device=self.target.device, enable_timing=True)
                b = torch.Event(device=self.target.device, enable_timing=True)
                a.record()
                r = fn()
                b.record()
                b.synchronize()
                return r, a.elapsed_time(b) / 1e3
            except (RuntimeError, TypeError, ValueError):
                self.events = False
        self.target.synchronize()
        t0 = time.perf_counter()
        r = fn()
        self.target.synchronize()
        return r, time.perf_counter() - t0


def percentile(xs, p):
    """Nearest-rank percentile: the smallest value with at least p % of the values at or below it."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def train(ctx, clock, dims, batch, seq, warm, steps):
    dev = ctx.target.device
    model = M.build(11, max_len=seq + 64, **dims).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = [b.to(dev) for b in M.token_stream(11, dims["vocab"], batch, seq, 2)]

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = M.loss_of(model, data[i % 2])
        loss.backward()
        opt.step()
        return loss

    for i in range(warm):
        step(i)
    times = [clock.measure(lambda i=i: step(i))[1] for i in range(steps)]
    return model, data[0], times


def infer(ctx, clock, model, prompt, warm, new_tokens):
    def prefill():
        caches = [{} for _ in model.blocks]
        logits = model(prompt, caches)
        return caches, logits[:, -1].argmax(-1, keepdim=True)

    def decode(caches, tok):
        for i in range(new_tokens):
            tok = model(tok, caches, offset=prompt.shape[1] + i)[:, -1].argmax(-1, keepdim=True)
        return tok

    with torch.no_grad():
        for _ in range(warm):
            c, t = prefill()
            decode(c, t)
        ttft, tpf, tdec = [], [], []
        for _ in range(max(1, warm)):
            (caches, tok), t_first = clock.measure(prefill)
            _, t_dec = clock.measure(lambda: decode(caches, tok))
            ttft.append(t_first)
            tdec.append(t_dec)
            tpf.append(t_first)
    return sorted(ttft)[len(ttft) // 2], sorted(tdec)[len(tdec) // 2]


def gemm(ctx, clock, n, warm, iters):
    out = {}
    for name, dt in DTYPES.items():
        if probe_dtype(dt, ctx.target) is not None:
            continue
        a = torch.randn(n, n, device=ctx.target.device).to(dt)
        b = torch.randn(n, n, device=ctx.target.device).to(dt)
        for _ in range(warm):
            a @ b
        _, t = clock.measure(lambda a=a, b=b: [a @ b for _ in range(iters)])
        out[name] = 2 * n ** 3 * iters / t / 1e12
    return out


def memcopy(ctx, clock, nbytes, warm, iters):
    src = torch.ones(nbytes // 4, device=ctx.target.device)
    dst = torch.empty_like(src)
    for _ in range(warm):
        dst.copy_(src)
    _, t = clock.measure(lambda: [dst.copy_(src) for _ in range(iters)])
    return 2 * src.numel() * 4 * iters / t / 1e9


def peaks():
    text = os.environ.get("XPU_ACCEPT_PEAKS", "").strip()
    return json.loads(text) if text else {}


def run(ctx):
    pol = ctx.policy["performance"]
    batch, seq = int(pol["batchSize"]), int(pol["sequenceLength"])
    warm, steps = int(pol["warmupSteps"]), max(1, int(pol["steps"]))
    cpu = ctx.target.type == "cpu"
    dims = SMALL if cpu else BIG
    clock = Clock(ctx.target)
    torch.set_float32_matmul_precision("high")
    model, prompt, times = train(ctx, clock, dims, batch, seq, warm, steps)
    new_tokens = max(2, min(32, seq // 4))
    model.eval()
    ttft, tdec = infer(ctx, clock, model, prompt[:, :seq], warm, new_tokens)
    tflops = gemm(ctx, clock, 256 if cpu else 8192, warm, 3 if cpu else 20)
    copy_gbps = memcopy(ctx, clock, (16 if cpu else 1024) << 20, warm, 3 if cpu else 20)
    torch.set_float32_matmul_precision("highest")
    total = sum(times)
    out = {"status": "pass", "model": dims, "batchSize": batch, "sequenceLength": seq,
           "warmupSteps": warm, "steps": steps, "tokens": batch * seq * steps,
           "timing": "device events" if clock.events else "perf_counter",
           "trainTokensPerSecond": batch * seq * steps / total,
           "stepLatencyP50Ms": percentile(times, 50) * 1e3, "stepLatencyP99Ms": percentile(times, 99) * 1e3,
           "prefillTokensPerSecond": batch * seq / ttft, "timeToFirstTokenMs": ttft * 1e3,
           "decodeTokensPerSecond": batch * new_tokens / tdec, "timePerOutputTokenMs": tdec / new_tokens * 1e3,
           "decodeSteps": new_tokens, "gemmTflops": tflops, "memoryCopyGBps": copy_gbps}
    pk = peaks()
    share = {}
    for dt, v in (pk.get("gemmTflops") or {}).items():
        if dt in tflops and v:
            share["gemmTflops." + dt] = tflops[dt] / float(v)
    if pk.get("memoryCopyGBps"):
        share["memoryCopyGBps"] = copy_gbps / float(pk["memoryCopyGBps"])
    if share:
        out["peakShare"] = share
    bad = [k for k, v in out.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        out.update(status="fail", reason=f"non-finite measurements: {bad}")
    else:
        out["reason"] = (f"{out['trainTokensPerSecond']:.0f} train tokens/s, step p50 {out['stepLatencyP50Ms']:.1f} ms, "
                         f"TTFT {out['timeToFirstTokenMs']:.1f} ms, TPOT {out['timePerOutputTokenMs']:.2f} ms")
    return out
