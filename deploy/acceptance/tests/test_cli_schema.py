import ast
import glob
import json
import os
import re
import subprocess
import sys

import jsonschema
import pytest

from conftest import ROOT, TEST_POLICY, child_env
from xpu_acceptance import policy, result

STAGES = ["environment", "operators", "convergence", "performance", "power", "stability", "collectives"]


def run_cli(tmp_path, *args, **env):
    return subprocess.run([sys.executable, "-m", "xpu_acceptance", *args], env=child_env(**env),
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)


def test_cli_end_to_end_all_stages_schema(tmp_path, validate):
    out, term = tmp_path / "result.json", tmp_path / "termination-log"
    p = run_cli(tmp_path, "--stages", "all", "--out", str(out), "--termination-log", str(term),
                LOCAL_WORLD_SIZE=2, XPU_ACCEPT_VENDOR="cpu", XPU_ACCEPT_IMAGE="registry.example.com/acc/torch:cpu",
                XPU_ACCEPT_CLASS="training-large-memory", XPU_ACCEPT_NODE="n1", XPU_ACCEPT_POD="p1")
    assert p.returncode == 0, p.stderr[-3000:]
    doc = validate(json.loads(out.read_text()))
    assert list(doc["stages"]) == STAGES
    want = {s: "pass" for s in STAGES} | {"power": "skip"}
    assert {s: v["status"] for s, v in doc["stages"].items()} == want
    assert doc["image"] == "registry.example.com/acc/torch:cpu" and doc["device"]["type"] == "cpu"
    lines = [l for l in p.stdout.splitlines() if l.startswith("XPU-ACCEPT-RESULT ")]
    assert len(lines) == 1 and json.loads(lines[0].split(" ", 1)[1]) == doc
    summary = term.read_bytes()
    assert 0 < len(summary) <= 4096
    s = validate(json.loads(summary))
    assert s["summary"] is True and {k: v["status"] for k, v in s["stages"].items()} == want


def test_cli_failing_stage_exits_1(tmp_path, validate):
    tight = {"operators": {"tolerances": {d: {"rtol": 0, "atol": 0} for d in ("fp32", "bf16", "fp16")}}}
    out = tmp_path / "result.json"
    p = run_cli(tmp_path, "--stages", "operators,power", "--out", str(out), "--termination-log",
                str(tmp_path / "termination-log"), XPU_ACCEPT_POLICY=json.dumps(tight))
    assert p.returncode == 1, p.stderr[-2000:]
    doc = validate(json.loads(out.read_text()))
    assert doc["stages"]["operators"]["status"] == "fail" and list(doc["stages"]) == ["operators", "power"]


def test_cli_bad_policy_exits_2_naming_the_key(tmp_path):
    bad = tmp_path / "policy.yaml"
    bad.write_text("operators:\n  tolerances:\n    fp32: {rtol: 1e-6, bogus: 1}\n")
    p = run_cli(tmp_path, "--policy", str(bad), "--out", str(tmp_path / "r.json"))
    assert p.returncode == 2 and "operators.tolerances.fp32.bogus: unknown key" in p.stderr
    p = run_cli(tmp_path, "--stages", "nope", "--out", str(tmp_path / "r.json"))
    assert p.returncode == 2 and "unknown stage" in p.stderr


def test_summary_schema_fits_4096_bytes(validate):
    big = {"schemaVersion": result.SCHEMA_VERSION, "vendor": "acme", "image": "x" * 300, "summary": False,
           "stages": {s: {"status": "fail", "reason": "r" * 5000, "seconds": 1.0,
                          "operators": [{"op": f"op{i}", "dtype": "fp32", "status": "fail", "maxAbsError": 1.0,
                                         "maxRelError": 1.0, "cosineSimilarity": 0.5} for i in range(500)]}
                      for s in STAGES}}
    validate(big)
    s = result.summary(big)
    assert s["summary"] is True and len(result.dumps(s).encode()) <= 4096
    validate(s)
    assert {k: v["status"] for k, v in s["stages"].items()} == {k: "fail" for k in STAGES}


def test_policy_schema_defaults_equal_policy_default_json(policy_schema):
    jsonschema.Draft202012Validator.check_schema(policy_schema)
    d = policy.defaults()
    jsonschema.Draft202012Validator(policy_schema).validate(d)

    def defaults_of(s):
        if s.get("type") == "object" and "properties" in s:
            return {k: defaults_of(v) for k, v in s["properties"].items()}
        return s.get("default")
    assert defaults_of(policy_schema) == d
    assert d["operators"]["tolerances"] == {"fp32": {"rtol": 1.3e-6, "atol": 1e-5}, "bf16": {"rtol": 1.6e-2, "atol": 1e-5},
                                            "fp16": {"rtol": 1e-3, "atol": 1e-5}}


def test_policy_merge_yaml_and_errors(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("operators:\n  tolerances:\n    bf16: {rtol: 2e-2}\ncollectives:\n  expectedBusBandwidthGBps: {nvidia: 400}\n")
    p = policy.load(str(f))
    assert p["operators"]["tolerances"]["bf16"] == {"rtol": 2e-2, "atol": 1e-5}
    assert p["collectives"]["expectedBusBandwidthGBps"] == {"nvidia": 400}
    assert p["convergence"]["steps"] == 40
    for text, msg in (('{"bogusThreshold": 1}', "bogusThreshold: unknown key"),
                      ('{"convergence": {"steps": "many"}}', "convergence.steps: expected a number"),
                      ('{"stability": 5}', "stability: expected an object")):
        with pytest.raises(policy.PolicyError, match=re.escape(msg)):
            policy.load(text=text)


def test_schema_rejects_other_versions_and_statuses(validate):
    good = {"schemaVersion": result.SCHEMA_VERSION, "stages": {"power": {"status": "skip"}}}
    validate(good)
    for bad in ({**good, "schemaVersion": "xpu.dra.dev/acceptance-result/v2"},
                {**good, "stages": {"power": {"status": "ok"}}}, {"stages": good["stages"]},
                {**good, "stages": {"bogus": {"status": "pass"}}}):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad)


def test_no_vendor_name_in_the_code_path():
    """The acceptance script's rule: vendor names only in vendors.py (and tests)."""
    vend = re.compile(r"(?<![a-z0-9])(cuda|nccl|hccl|npu|mlu|musa|gcu|rocm)(?![a-z0-9])")
    hits, src = [], ""
    files = [f for f in glob.glob(ROOT + "/**/*.py", recursive=True)
             if not re.search(r"(^|/)(tests?/|test_|conftest|vendors\.py$)", f)]
    for f in files:
        text = open(f).read()
        src += text
        t = ast.parse(text)
        docs = {id(n.body[0].value) for n in ast.walk(t)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr)}
        for n in ast.walk(t):
            s = (n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else
                 n.name if isinstance(n, ast.alias) else
                 n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs else "")
            if vend.search(s.lower()):
                hits.append(f"{f}:{n.lineno}: {s[:40]!r}")
    assert "torch.accelerator" in src and "get_default_backend_for_device" in src
    assert not hits, hits


def test_testdata_fixtures_schema(validate):
    docs = {os.path.basename(f): validate(json.load(open(f))) for f in glob.glob(os.path.join(ROOT, "testdata", "*.json"))}
    assert set(docs) == {"nvidia.json", "huawei.json"}
    assert {d["vendor"] for d in docs.values()} == {"nvidia", "huawei"}
    assert len({d["image"] for d in docs.values()}) == 2
    for d in docs.values():
        assert d["stages"]["power"]["status"] == "pass" and d["stages"]["power"]["joulesPerToken"] > 0
        assert d["stages"]["stability"]["healthEvents"] == 0 and d["stages"]["stability"]["xids"] == 0
