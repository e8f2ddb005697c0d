import json
import math

import pytest
import torch

from conftest import make_ctx
from xpu_acceptance import convergence, environment, performance, power, stability
from xpu_acceptance import model as M


def test_convergence_matches_the_cpu_fp32_reference(ctx, save):
    st = convergence.run(ctx)
    save(ctx, {"convergence": st})
    assert st["status"] == "pass", st["reason"]
    assert len(st["loss"]) == 20 == len(st["referenceLoss"]) and not st["diverged"]
    assert st["finalLossDelta"] <= 0.02 and st["loss"][-1] < st["loss"][0] - 0.5


def test_diverging_model_fails(ctx, save, monkeypatch):
    def blow_up(step, model):
        if step >= 5:
            for p in model.parameters():
                p.grad.mul_(1e6).add_(1e3)
    monkeypatch.setattr(convergence, "device_grad_hook", blow_up)
    monkeypatch.setattr(convergence, "LR", 0.5)
    st = convergence.run(ctx)
    save(ctx, {"convergence": st})
    assert st["status"] == "fail" and st["diverged"], st["reason"]
    assert "diverged at step" in st["reason"]


def test_diverging_to_nan_fails(ctx, monkeypatch):
    monkeypatch.setattr(convergence, "device_grad_hook",
                        lambda step, model: [p.grad.fill_(float("nan")) for p in model.parameters()] if step == 3 else None)
    st = convergence.run(ctx)
    assert st["status"] == "fail" and st["diverged"]
    assert any(x is None or not math.isfinite(x) for x in st["loss"][4:])


def test_performance_metrics(ctx, save, monkeypatch):
    monkeypatch.delenv("XPU_ACCEPT_PEAKS", raising=False)
    st = performance.run(ctx)
    save(ctx, {"performance": st})
    assert st["status"] == "pass"
    for k in ("trainTokensPerSecond", "stepLatencyP50Ms", "stepLatencyP99Ms", "prefillTokensPerSecond",
              "decodeTokensPerSecond", "timeToFirstTokenMs", "timePerOutputTokenMs", "memoryCopyGBps"):
        assert st[k] > 0, k
    assert st["stepLatencyP99Ms"] >= st["stepLatencyP50Ms"]
    assert set(st["gemmTflops"]) == {"fp32", "bf16", "fp16"} and st["tokens"] == 4 * 32 * 4
    assert "peakShare" not in st
    tps = st["tokens"] / (st["trainTokensPerSecond"])
    assert tps >= st["stepLatencyP50Ms"] / 1e3  # total time covers at least one median step


def test_performance_peak_share_when_peaks_given(ctx, monkeypatch):
    monkeypatch.setenv("XPU_ACCEPT_PEAKS", json.dumps({"gemmTflops": {"fp32": 1000.0}, "memoryCopyGBps": 1e4}))
    st = performance.run(ctx)
    assert st["peakShare"]["gemmTflops.fp32"] == pytest.approx(st["gemmTflops"]["fp32"] / 1000.0)
    assert st["peakShare"]["memoryCopyGBps"] == pytest.approx(st["memoryCopyGBps"] / 1e4)


def test_percentile_nearest_rank():
    xs = list(range(1, 101))
    assert performance.percentile(xs, 50) == 50 and performance.percentile(xs, 99) == 99
    assert performance.percentile([3.0], 99) == 3.0


def test_stability_soak_counts_steps(ctx, save):
    st = stability.run(ctx)
    save(ctx, {"stability": st, "power": power.run(ctx)})
    assert st["status"] == "pass" and st["steps"] >= 1 and st["errors"] == 0 and st["nanSteps"] == 0


def test_stability_counts_nan_and_errors(monkeypatch):
    calls = [0]

    def flaky(model, batch):  # cheap steps: odd ones raise, even ones give NaN
        calls[0] += 1
        if calls[0] % 2:
            raise RuntimeError("device lost")
        return model.head.weight.sum() * float("nan")
    monkeypatch.setattr(M, "loss_of", flaky)
    st = stability.run(make_ctx(pol={"stability": {"durationSeconds": 0.5}}))
    assert st["status"] == "fail" and st["errors"] >= 1 and st["nanSteps"] >= 1, st
    assert st["errors"] + st["nanSteps"] == st["steps"]
    assert "device lost" in st["errorMessages"][0]


def test_power_is_measured_by_the_driver(ctx):
    st = power.run(ctx)
    assert st["status"] == "skip" and "measured by the driver" in st["reason"]


def test_environment_reports_versions_and_claimed_devices(save):
    c = make_ctx(env={"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b", "XPU_ACCEPT_VENDOR": "nvidia"})
    st = environment.run(c)
    save(c, {"environment": st})
    assert st["status"] == "pass", st["reason"]  # the device was forced to cpu: no type check
    assert st["versions"]["torch"] == torch.__version__
    assert st["claimedDevices"] == ["GPU-a", "GPU-b"] and st["frameworkDevices"]


def test_environment_fails_when_vendor_device_type_differs():
    c = make_ctx(env={"XPU_ACCEPT_VENDOR": "huawei"})
    c.env.pop("XPU_ACCEPT_DEVICE")
    st = environment.run(c)
    assert st["status"] == "fail" and "device type" in st["reason"]
