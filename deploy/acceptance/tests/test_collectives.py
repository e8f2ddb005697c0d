import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, child_env, make_ctx
from xpu_acceptance import collectives

FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "broadcast": lambda n: 1.0}


def check_results(results, n, scope, sizes):
    assert {r["op"] for r in results} == set(FACTOR)
    for r in results:
        assert r["scope"] == scope and r["worldSize"] == n and r["correct"], r
        assert r["algBandwidthGBps"] == pytest.approx(r["bytes"] / r["seconds"] / 1e9, rel=1e-9)
        assert r["busBandwidthGBps"] == pytest.approx(r["algBandwidthGBps"] * FACTOR[r["op"]](n), rel=1e-9)
    got = sorted({r["bytes"] for r in results if r["op"] == "broadcast"})
    assert len(got) == len(sizes) and all(abs(g - s) < 4 * n for g, s in zip(got, sizes))


@pytest.mark.parametrize("n", [2, 4])
def test_gloo_collectives_node_busbw_by_the_formulas(n, save):
    c = make_ctx(env={"LOCAL_WORLD_SIZE": str(n)})
    st = collectives.run(c)
    save(c, {"collectives": st})
    assert st["status"] == "pass", st["reason"]
    assert st["backend"] == "gloo"
    check_results(st["results"], n, "node", st["sizes"])
    assert st["sizes"] == [1024, 4096, 16384, 65536]
    assert st["gate"]["status"] == "skip" and "no expectedBusBandwidthGBps" in st["gate"]["reason"]


def test_gloo_gang_of_two_nodes(tmp_path, free_port, validate):
    procs = []
    for rank in (0, 1):
        env = child_env(NNODES=2, NODE_RANK=rank, MASTER_ADDR="127.0.0.1", XPU_ACCEPT_MASTER_PORT=free_port,
                        LOCAL_WORLD_SIZE=1, WORLD_SIZE=2, XPU_ACCEPT_VENDOR="cpu", XPU_ACCEPT_POD=f"member-{rank}")
        out = tmp_path / f"gang-{rank}.json"
        procs.append((out, subprocess.Popen([sys.executable, "-m", "xpu_acceptance", "--stages", "collectives",
                                             "--out", str(out), "--termination-log", str(tmp_path / f"termination-{rank}")],
                                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    for out, p in procs:
        so, se = p.communicate(timeout=120)
        assert p.returncode == 0, se[-2000:]
        doc = validate(json.loads(out.read_text()))
        st = doc["stages"]["collectives"]
        assert st["status"] == "pass" and st["nnodes"] == 2
        check_results(st["results"], 2, "gang", st["sizes"])
        assert st["gate"]["scope"] == "gang"


def test_gloo_single_process_is_skipped(save):
    c = make_ctx()
    st = collectives.run(c)
    assert st["status"] == "skip" and "nothing to communicate" in st["reason"]


def test_gloo_gate_pass_fail_skip():
    res = [{"op": "all_reduce", "scope": "node", "bytes": 1 << 20, "busBandwidthGBps": 10.0},
           {"op": "all_reduce", "scope": "node", "bytes": 1 << 22, "busBandwidthGBps": 20.0}]
    pol = {"gateBytes": 1 << 22, "minShareOfExpected": 0.9, "expectedBusBandwidthGBps": {"acme": 22.0, "slow": 100.0}}
    assert collectives.gate(res, pol, "acme")["status"] == "pass"  # 20 >= 0.9 x 22
    g = collectives.gate(res, pol, "slow")
    assert g["status"] == "fail" and g["measuredBusBandwidthGBps"] == 20.0
    assert collectives.gate(res, pol, "other")["status"] == "skip"


def test_gloo_sizes_sweep():
    assert collectives.sizes(1 << 20, 1 << 30) == [1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30]
