"""Collectives stage: all_reduce, all_gather, reduce_scatter and broadcast over a size sweep.

Backend: torch.distributed.get_default_backend_for_device(device): the vendor's collective
library on an accelerator, gloo on the CPU. Scopes:
  node  one process per claimed device in this pod (LOCAL_WORLD_SIZE overrides the count),
        torch.multiprocessing spawn, rendezvous on 127.0.0.1 and a free port;
  gang  when NNODES > 1: every process of every pod of the gang, rank NODE_RANK x local + local
        rank, world NNODES x local, rendezvous at MASTER_ADDR:XPU_ACCEPT_MASTER_PORT (29500).
Sizes: minBytes, x4, ... up to maxBytes, plus gateBytes for all_reduce. bytes is the size of
the largest buffer (nccl-tests' "size": the full vector of all_reduce and broadcast, the
gathered output of all_gather, the input of reduce_scatter). Each size: 2 warm-up runs, then
iterations timed together after a device synchronize; seconds = the slowest rank's time per
iteration. algBandwidthGBps = bytes / seconds / 1e9; busBandwidthGBps = algbw x 2(n-1)/n
(all_reduce), (n-1)/n (all_gather, reduce_scatter), 1 (broadcast), as in the PERFORMANCE note
of nccl-tests (docs/acceptance.md).
Results are checked exactly: inputs are small integers in fp32, so every sum is exact.
The gate: all_reduce bus bandwidth at gateBytes in the widest scope, against
expectedBusBandwidthGBps[vendor] x minShareOfExpected; "skip" when the vendor has no value.
"""

import json
import os
import socket
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

FACTORS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
           "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}
WARMUP = 2


def sizes(lo, hi, step=4):
    out, b = [], max(4, int(lo))
    while b <= hi:
        out.append(b)
        b *= step
    return out or [max(4, int(lo))]


def iterations(nbytes):
    return 20 if nbytes <= 1 << 20 else 10 if nbytes <= 64 << 20 else 5


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sync(device):
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def one(op, nbytes, group, device):
    """Runs OP on a buffer of NBYTES over GROUP: (seconds per iteration on the slowest rank, correct)."""
    n, r = dist.get_world_size(group), dist.get_rank(group)
    count = max(n, nbytes // 4 // n * n)  # fp32 elements, divisible by n
    chunk = count // n
    if op == "all_reduce":
        x = torch.full((count,), float(r + 1), device=device)

        def call():
            x.fill_(float(r + 1))
            dist.all_reduce(x, group=group)

        def check():
            return bool((x == n * (n + 1) / 2).all())
    elif op == "all_gather":
        x = torch.full((chunk,), float(r + 1), device=device)
        y = torch.empty(count, device=device)

        def call():
            dist.all_gather_into_tensor(y, x, group=group)

        def check():
            want = torch.arange(1, n + 1, device=device, dtype=torch.float32).repeat_interleave(chunk)
            return bool((y == want).all())
    elif op == "reduce_scatter":
        x = torch.arange(count, device=device, dtype=torch.float32).remainder(1024) + r
        y = torch.empty(chunk, device=device)

        def call():
            dist.reduce_scatter_tensor(y, x, group=group)

        def check():
            base = torch.arange(r * chunk, (r + 1) * chunk, device=device, dtype=torch.float32).remainder(1024)
            return bool((y == base * n + n * (n - 1) / 2).all())
    else:
        x = torch.empty(count, device=device)
        src = dist.get_global_rank(group, 0) if group is not None else 0

        def call():
            x.fill_(float(r + 1))
            dist.broadcast(x, src=src, group=group)

        def check():
            return bool((x == 1.0).all())
    for _ in range(WARMUP):
        call()
    correct = check()
    iters = iterations(nbytes)
    _sync(device)
    dist.barrier(group=group)
    t0 = time.perf_counter()
    for _ in range(iters):
        call()
    _sync(device)
    t = torch.tensor([(time.perf_counter() - t0) / iters, 0.0 if correct else 1.0], dtype=torch.float64)
    tt = t.to(device) if device.type != "cpu" else t
    dist.all_reduce(tt, op=dist.ReduceOp.MAX, group=group)
    t = tt.to("cpu")
    return float(t[0]), bool(t[1] == 0) and check(), count * 4


def sweep(scope, group, device, byte_sizes, gate_bytes):
    out = []
    n = dist.get_world_size(group)
    for op in FACTORS:
        todo = list(byte_sizes) + ([gate_bytes] if op == "all_reduce" and gate_bytes not in byte_sizes else [])
        for b in todo:
            secs, ok, real = one(op, b, group, device)
            alg = real / secs / 1e9
            out.append({"op": op, "scope": scope, "worldSize": n, "bytes": real, "seconds": secs,
                        "algBandwidthGBps": alg, "busBandwidthGBps": alg * FACTORS[op](n), "correct": ok})
    return out


def worker(local_rank, cfg):
    """One process: joins the group(s), runs the sweeps, local rank 0 writes the results."""
    dtype = cfg["deviceType"]
    device = torch.device("cpu") if dtype == "cpu" else torch.device(dtype, local_rank)
    if dtype != "cpu":
        torch.accelerator.set_device_index(local_rank)
    backend = dist.get_default_backend_for_device(device)
    local, nodes, node = cfg["local"], cfg["nnodes"], cfg["nodeRank"]
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = cfg["addr"], str(cfg["port"])
    dist.init_process_group(backend, rank=node * local + local_rank, world_size=nodes * local)
    results = []
    try:
        if local > 1:
            groups = [dist.new_group(list(range(i * local, (i + 1) * local))) for i in range(nodes)]
            g = groups[node] if nodes > 1 else None
            results += sweep("node", g, device, cfg["sizes"], cfg["gateBytes"])
        if nodes > 1:
            results += sweep("gang", None, device, cfg["sizes"], cfg["gateBytes"])
        dist.barrier()
    finally:
        dist.destroy_process_group()
    if local_rank == 0:
        with open(cfg["out"], "w") as f:
            json.dump({"backend": backend, "results": results}, f)


def measure(device_type, local, nnodes, node_rank, addr, port, byte_sizes, gate_bytes):
    """Runs the sweeps (spawning LOCAL processes; inline when one): backend and results."""
    with tempfile.TemporaryDirectory() as d:
        cfg = {"deviceType": device_type, "local": local, "nnodes": nnodes, "nodeRank": node_rank,
               "addr": addr, "port": port, "sizes": byte_sizes, "gateBytes": gate_bytes,
               "out": os.path.join(d, "out.json")}
        if local == 1:
            worker(0, cfg)
        else:
            mp.spawn(worker, args=(cfg,), nprocs=local, join=True)
        with open(cfg["out"]) as f:
            return json.load(f)


def gate(results, pol, vendor):
    b = int(pol["gateBytes"])
    scope = "gang" if any(r["scope"] == "gang" for r in results) else "node"
    at = [r for r in results if r["op"] == "all_reduce" and r["scope"] == scope and r["bytes"] <= b]
    measured = max(at, key=lambda r: r["bytes"])["busBandwidthGBps"] if at else None
    expected = (pol.get("expectedBusBandwidthGBps") or {}).get(vendor)
    g = {"bytes": b, "op": "all_reduce", "scope": scope, "minShare": float(pol["minShareOfExpected"]),
         "measuredBusBandwidthGBps": measured, "expectedBusBandwidthGBps": expected}
    if expected is None:
        g.update(status="skip", reason=f"no expectedBusBandwidthGBps for vendor {vendor!r} in the policy")
    elif measured is None:
        g.update(status="fail", reason=f"no all_reduce measurement at {b} bytes")
    else:
        ok = measured >= float(expected) * g["minShare"]
        g.update(status="pass" if ok else "fail",
                 reason=f"{measured:.4g} GB/s {'>=' if ok else '<'} {g['minShare']} x {float(expected):.4g} GB/s")
    return g


def run(ctx):
    from .device import local_world_size

    pol, env = ctx.policy["collectives"], ctx.env
    local = local_world_size(ctx.target, env)
    nnodes = int(env.get("NNODES", "1") or 1)
    node_rank = int(env.get("NODE_RANK", "0") or 0)
    backend = dist.get_default_backend_for_device(ctx.target.device)
    if local < 2 and nnodes < 2:
        return {"status": "skip", "backend": backend, "results": [],
                "reason": "one process on one node: nothing to communicate (set LOCAL_WORLD_SIZE or run as a gang)"}
    if nnodes > 1:
        addr = env.get("MASTER_ADDR", "127.0.0.1")
        port = int(env.get("XPU_ACCEPT_MASTER_PORT", "29500") or 29500)
    else:
        addr, port = "127.0.0.1", free_port()
    byte_sizes = sizes(pol["minBytes"], pol["maxBytes"])
    got = measure(ctx.target.type, local, nnodes, node_rank, addr, port, byte_sizes, int(pol["gateBytes"]))
    results = got["results"]
    g = gate(results, pol, ctx.target.vendor)
    wrong = [f"{r['op']}@{r['bytes']}" for r in results if not r["correct"]]
    out = {"backend": got["backend"], "localWorldSize": local, "nnodes": nnodes, "nodeRank": node_rank,
           "sizes": byte_sizes, "results": results, "gate": g}
    if wrong:
        out.update(status="fail", reason=f"wrong results: {', '.join(wrong[:6])}")
    elif g["status"] == "fail":
        out.update(status="fail", reason="gate: " + g["reason"])
    else:
        out.update(status="pass", reason=f"{len(results)} measurements correct on {got['backend']}; gate {g['status']}: {g['reason']}")
    return out
