"""Shared fixtures of the workload's CPU self-test.

Run from the repo root:  "$(scripts/acceptance-venv)/bin/python" -m pytest deploy/acceptance/tests -q
Every test that runs a stage leaves its result JSON (valid against schema/result.schema.json)
in its tmp_path, so the acceptance script can check the evidence the self-test produced.
"""

import json
import os
import socket
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # deploy/acceptance
sys.path.insert(0, ROOT)

from xpu_acceptance import device, policy, result  # noqa: E402
from xpu_acceptance.__main__ import Context  # noqa: E402

# Small sizes: the whole suite runs in about a minute on two cores.
TEST_POLICY = {
    "convergence": {"steps": 20},
    "performance": {"warmupSteps": 1, "steps": 4, "batchSize": 4, "sequenceLength": 32},
    "stability": {"durationSeconds": 1},
    "collectives": {"minBytes": 1024, "maxBytes": 65536, "gateBytes": 65536},
}


@pytest.fixture(scope="session")
def result_schema():
    with open(os.path.join(ROOT, "schema", "result.schema.json")) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def policy_schema():
    with open(os.path.join(ROOT, "schema", "policy.schema.json")) as f:
        return json.load(f)


@pytest.fixture
def validate(result_schema):
    import jsonschema

    def check(doc):
        jsonschema.Draft202012Validator(result_schema).validate(doc)
        return doc
    return check


def make_ctx(env=None, pol=None):
    env = {"XPU_ACCEPT_DEVICE": "cpu", **(env or {})}
    p = policy.merge(policy.load(), TEST_POLICY, "test")
    if pol:
        p = policy.merge(p, pol, "test")
    t = device.find(env)
    return Context(target=t, policy=p, env=env, backend="gloo")


@pytest.fixture
def ctx():
    return make_ctx()


@pytest.fixture
def save(tmp_path, validate):
    """save(ctx, {stage: details}) -> the result document, written to tmp_path/result-*.json."""
    n = [0]

    def write(c, stages):
        doc = result.new(c.target, c.env)
        doc["stages"] = stages
        doc["finishedAt"] = result.now()
        doc = result.clean(doc)
        validate(doc)
        n[0] += 1
        with open(tmp_path / f"result-{n[0]}.json", "w") as f:
            json.dump(doc, f, indent=1)
        return doc
    return write


@pytest.fixture
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(**kw):
    """The environment of a workload subprocess: this Python's path to the package, CPU device."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XPU_ACCEPT_", "NNODES", "NODE_RANK", "LOCAL_WORLD"))}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["XPU_ACCEPT_DEVICE"] = "cpu"
    env["XPU_ACCEPT_POLICY"] = json.dumps(TEST_POLICY)
    env.update({k: str(v) for k, v in kw.items()})
    return env
