"""The acceptance policy: every threshold and size of the workload.

Defaults come from policy.default.json (next to the package in the repo, or in
/opt/xpu-acceptance in the images). A user's policy (JSON or YAML, from --policy FILE or the
XPU_ACCEPT_POLICY variable) is merged over them key by key; every key is optional, and a key the
defaults do not have is an error naming its path. Maps whose keys are free (a vendor -> GB/s map
such as collectives.expectedBusBandwidthGBps) take any key with a number value.
"""

import json
import os

FREE_MAPS = {("collectives", "expectedBusBandwidthGBps")}


class PolicyError(ValueError):
    pass


def default_path():
    here = os.path.dirname(os.path.abspath(__file__))
    for p in (os.path.join(here, "..", "policy.default.json"), os.path.join(here, "policy.default.json"),
              "/opt/xpu-acceptance/policy.default.json"):
        if os.path.exists(p):
            return os.path.normpath(p)
    raise PolicyError("policy.default.json: not found next to the xpu_acceptance package")


def defaults():
    with open(default_path()) as f:
        return json.load(f)


def parse(text, source):
    """The policy in TEXT (JSON first, then YAML: YAML 1.1 reads 1e-5 as a string)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml
        data = yaml.safe_load(text)
    except Exception as e:  # noqa: BLE001 - the parser's own message is the evidence
        raise PolicyError(f"policy {source}: not JSON or YAML: {e}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PolicyError(f"policy {source}: expected an object, got {type(data).__name__}")
    return data


def _number(v):
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def merge(base, user, source, path=()):
    """BASE with USER merged over it; unknown keys and wrong types are PolicyErrors."""
    if not isinstance(user, dict):
        where = ".".join(path) or "(top)"
        raise PolicyError(f"policy {source}: {where}: expected an object, got {type(user).__name__}")
    out = dict(base)
    for k, v in user.items():
        p = path + (str(k),)
        where = ".".join(p)
        if path in FREE_MAPS:
            n = _number(v)
            if n is None:
                raise PolicyError(f"policy {source}: {where}: expected a number, got {v!r}")
            out[k] = n
        elif k not in base:
            raise PolicyError(f"policy {source}: {where}: unknown key")
        elif isinstance(base[k], dict):
            out[k] = merge(base[k], v, source, p)
        elif isinstance(base[k], bool):
            if not isinstance(v, bool):
                raise PolicyError(f"policy {source}: {where}: expected true or false, got {v!r}")
            out[k] = v
        else:
            n = _number(v)
            if n is None:
                raise PolicyError(f"policy {source}: {where}: expected a number, got {v!r}")
            if n < 0:
                raise PolicyError(f"policy {source}: {where}: expected a number >= 0, got {v!r}")
            out[k] = int(n) if isinstance(base[k], int) and float(n).is_integer() else n
    return out


def load(path=None, text=None):
    """The defaults merged with the policy FILE at PATH, then with the policy TEXT (env)."""
    policy = defaults()
    if path:
        with open(path) as f:
            policy = merge(policy, parse(f.read(), path), path)
    if text:
        policy = merge(policy, parse(text, "XPU_ACCEPT_POLICY"), "XPU_ACCEPT_POLICY")
    return policy


def from_env(path=None):
    return load(path, os.environ.get("XPU_ACCEPT_POLICY"))
