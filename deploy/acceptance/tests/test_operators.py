import warnings

import torch
import torch.nn.functional as F

from xpu_acceptance import operators, vendors

ISSUE_OPS = ["matmul", "linear", "bmm", "conv2d", "softmax", "log_softmax", "layer_norm", "rms_norm", "gelu", "silu",
             "scaled_dot_product_attention", "embedding", "cross_entropy", "sum", "mean", "amax", "cumsum", "topk",
             "sort", "gather", "scatter_add", "index_select", "cat", "stack", "transpose_contiguous", "where", "adamw"]


def test_operators_pass_on_cpu_against_fp64_reference_schema(ctx, save):
    st = operators.run(ctx)
    save(ctx, {"operators": st})
    assert st["status"] == "pass", st["reason"]
    names = {e["op"] for e in st["operators"]}
    assert len(names) >= 30 and set(ISSUE_OPS) <= names
    assert {e["dtype"] for e in st["operators"]} == {"fp32", "bf16", "fp16"}
    for e in st["operators"]:
        assert e["cosineSimilarity"] >= 0.99 and e["maxAbsError"] >= 0 and e["maxRelError"] >= 0
    assert not st["gaps"] and not st["fallbacks"]


def test_wrong_kernel_fails(ctx, save, monkeypatch):
    right = operators.KERNELS["matmul"]
    monkeypatch.setitem(operators.KERNELS, "matmul", lambda a, b: right(a, b) * 1.01)
    monkeypatch.setitem(operators.KERNELS, "softmax", lambda x: F.softmax(x, dim=0))  # wrong axis
    st = operators.run(ctx)
    save(ctx, {"operators": st})
    assert st["status"] == "fail"
    bad = {(e["op"], e["dtype"]) for e in st["operators"] if e["status"] == "fail"}
    assert {("matmul", d) for d in ("fp32", "bf16")} <= bad
    assert {("softmax", d) for d in ("fp32", "bf16", "fp16")} <= bad
    assert all(e["op"] in ("matmul", "softmax") for e in st["operators"] if e["status"] == "fail")
    assert "outside tolerance" in st["reason"]


def test_wrong_kernel_small_error_caught_by_fp32_rtol(ctx):
    tol = ctx.policy["operators"]["tolerances"]["fp32"]
    pats = vendors.fallback_warnings()
    ok = operators.run_one("exp", "fp32", ctx.target, tol, 0.99, pats)[1]
    assert ok["status"] == "pass"
    orig = operators.KERNELS["exp"]
    operators.KERNELS["exp"] = lambda x: orig(x) * (1 + 1e-5)  # about 80 ulp
    try:
        bad = operators.run_one("exp", "fp32", ctx.target, tol, 0.99, pats)[1]
    finally:
        operators.KERNELS["exp"] = orig
    assert bad["status"] == "fail" and bad["cosineSimilarity"] > 0.9999  # cosine alone would miss it


def test_fallback_warning_fails(ctx, save, monkeypatch):
    def gelu_on_host(x):
        warnings.warn("CAUTION: The operator 'aten::gelu' is not currently supported on the XPU backend "
                      "and will fall back to run on the CPU. This may have performance implications.", UserWarning)
        return F.gelu(x)
    monkeypatch.setitem(operators.KERNELS, "gelu", gelu_on_host)
    st = operators.run(ctx)
    save(ctx, {"operators": st})
    assert st["status"] == "fail" and "fell back" in st["reason"]
    assert {(f["op"], f["dtype"]) for f in st["fallbacks"]} == {("gelu", d) for d in ("fp32", "bf16", "fp16")}
    assert "fall back to run on the CPU" in st["fallbacks"][0]["warning"]
    assert "gelu" not in {e["op"] for e in st["operators"]}


def test_fallback_output_off_device_fails(ctx, monkeypatch):
    monkeypatch.setitem(operators.KERNELS, "silu", lambda x: torch.empty(x.shape, device="meta"))
    kind, item = operators.run_one("silu", "fp32", ctx.target, {"rtol": 1.3e-6, "atol": 1e-5}, 0.99,
                                   vendors.fallback_warnings())
    assert kind == "fallback" and "output on meta" in item["warning"]


def test_fallback_patterns_match_extension_warnings():
    import re
    msgs = ["Warning: The operator 'aten::nonzero' is not currently supported on the MPS backend and will fall back to run on the CPU.",
            "CAUTION: The operator 'aten::foo' is not currently supported on the NPU backend and will fall back to run on the CPU."]
    for m in msgs:
        assert any(re.match(p, m, re.I) for p in vendors.fallback_warnings()), m
    assert not any(re.match(p, "step 3 finished", re.I) for p in vendors.fallback_warnings())


def test_unsupported_operator_is_a_gap_with_the_framework_error(ctx, save, monkeypatch):
    def unsupported(*a):
        return torch.ops.aten._no_such_operator_for_the_test(*a)
    monkeypatch.setitem(operators.KERNELS, "cumsum", unsupported)
    st = operators.run(ctx)
    save(ctx, {"operators": st})
    assert st["status"] == "fail" and "operator gaps" in st["reason"]
    assert {g["op"] for g in st["gaps"]} == {"cumsum"} and len(st["gaps"]) == 3
    assert "_no_such_operator_for_the_test" in st["gaps"][0]["error"]
