"""Environment stage: framework, extension and toolkit versions; the devices the framework sees
against the devices the claim was given.

Passes when an installed extension imports cleanly, the device type matches the claim's vendor
(unless XPU_ACCEPT_DEVICE forced the device), the framework sees at least one device, and, when
the claim's visibility variables list devices, exactly that many. Driver and firmware versions
are the NodeInventory's: `xpuctl accept run` checks them against the support matrix; the
workload records XPU_ACCEPT_DRIVER_VERSION when it is set.
"""

import importlib
import json
import os
import platform

import torch

from . import vendors


def _attr(mod_name, path):
    try:
        o = importlib.import_module(mod_name)
        for part in path.split("."):
            o = getattr(o, part)
        return None if o is None else str(o)
    except Exception:  # noqa: BLE001 - absent module or attribute: no version from it
        return None


def toolkit_version(vendor):
    for mod, path in vendors.facts(vendor)["toolkit"]:
        v = _attr(mod, path)
        if v:
            return v
    return None


def gang_files(env):
    """The gang's rank table (RANK_TABLE_FILE), when the driver handed one over."""
    p = env.get("RANK_TABLE_FILE", "")
    if p and os.path.exists(p):
        try:
            with open(p) as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            return {"error": str(e)}
    return None


def run(ctx):
    t, env = ctx.target, ctx.env
    facts = vendors.facts(t.vendor)
    forced = bool(env.get("XPU_ACCEPT_DEVICE"))
    ext_versions = {k: v for k, v in t.extensions.items()}
    problems = [f"extension {k}: {v}" for k, v in ext_versions.items() if v.startswith("error:")]
    if not forced and t.vendor in vendors.VENDORS and facts["deviceType"] != t.type:
        problems.append(f"vendor {t.vendor} runs device type {facts['deviceType']}, the framework offers {t.type}")
    if t.count < 1:
        problems.append("the framework sees no device")
    if t.claimed and t.type != "cpu" and t.count != len(t.claimed):
        problems.append(f"the claim gave {len(t.claimed)} devices ({', '.join(t.claimed)}), the framework sees {t.count}")
    out = {
        "versions": {"torch": torch.__version__, "python": platform.python_version(),
                     "extension": ", ".join(f"{k} {v}" for k, v in ext_versions.items()) or None,
                     "toolkit": toolkit_version(t.vendor)},
        "deviceType": t.type, "claimedDevices": t.claimed,
        "frameworkDevices": [f"{t.type}:{i} {n}" for i, n in enumerate(t.names)],
        "driverVersion": env.get("XPU_ACCEPT_DRIVER_VERSION") or None,
        "backend": ctx.backend,
    }
    rt = gang_files(env)
    if rt is not None:
        out["rankTable"] = rt if len(json.dumps(rt)) < 2000 else {"entries": len(json.dumps(rt))}
    for k in ("NNODES", "NODE_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR"):
        if env.get(k):
            out.setdefault("gang", {})[k] = env[k]
    out["status"] = "fail" if problems else "pass"
    out["reason"] = "; ".join(problems) if problems else f"{t.count} {t.type} device(s), torch {torch.__version__}"
    return out
