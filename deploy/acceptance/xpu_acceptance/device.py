"""The device under test, found through torch.accelerator.

The extension modules listed in vendors.py are imported when the image has them (they register
their device type with torch); then torch.accelerator names the current accelerator. With none,
the device is the CPU, the reference and test backend. XPU_ACCEPT_DEVICE overrides the choice
("cpu" in the self-test, or e.g. "<type>:1"). The claimed devices come from the visibility
variables the driver's CDI spec sets (vendors.py lists them).
"""

import importlib
import os
from dataclasses import dataclass, field

import torch

from . import vendors


@dataclass
class Target:
    device: torch.device
    vendor: str
    count: int
    names: list = field(default_factory=list)
    claimed: list = field(default_factory=list)
    extensions: dict = field(default_factory=dict)

    @property
    def type(self):
        return self.device.type

    def synchronize(self):
        if self.device.type != "cpu":
            torch.accelerator.synchronize(self.device)

    def describe(self):
        return {"type": self.type, "count": self.count, "names": self.names}


def import_extensions():
    """Imports every installed extension module; name -> version (or the import error)."""
    out = {}
    for name in vendors.all_extensions():
        try:
            mod = importlib.import_module(name)
            out[name] = str(getattr(mod, "__version__", "unknown"))
        except ImportError:
            continue
        except Exception as e:  # noqa: BLE001 - an extension that is there but breaks is evidence
            out[name] = f"error: {type(e).__name__}: {e}"
    return out


def claimed_devices(env=None):
    """The device ids the claim was given, from the first visibility variable that is set."""
    env = os.environ if env is None else env
    for var in vendors.all_visibility_variables():
        v = env.get(var, "").strip()
        if v and v.lower() not in ("void", "none", "all"):
            return [x.strip() for x in v.split(",") if x.strip()]
    return []


def pick_device(env=None):
    env = os.environ if env is None else env
    forced = env.get("XPU_ACCEPT_DEVICE", "").strip()
    if forced:
        return torch.device(forced)
    if torch.accelerator.is_available():
        acc = torch.accelerator.current_accelerator(check_available=True)
        if acc is not None:
            return torch.device(acc.type, torch.accelerator.current_device_index())
    return torch.device("cpu")


def device_names(dev, count):
    if dev.type == "cpu":
        import platform
        return [platform.processor() or platform.machine() or "cpu"]
    mod = getattr(torch, dev.type, None)
    names = []
    for i in range(count):
        try:
            names.append(str(mod.get_device_name(i)))
        except Exception:  # noqa: BLE001 - a backend without names: its type and index
            names.append(f"{dev.type}:{i}")
    return names


def find(env=None):
    env = os.environ if env is None else env
    exts = import_extensions()
    dev = pick_device(env)
    count = 1 if dev.type == "cpu" else torch.accelerator.device_count()
    vendor = env.get("XPU_ACCEPT_VENDOR", "").strip() or vendors.vendor_for_device_type(dev.type)
    return Target(device=dev, vendor=vendor, count=count, names=device_names(dev, count),
                  claimed=claimed_devices(env), extensions=exts)


def local_world_size(target, env=None):
    """Processes per pod for the collectives: LOCAL_WORLD_SIZE, else the claimed or seen devices."""
    env = os.environ if env is None else env
    v = env.get("LOCAL_WORLD_SIZE", "").strip()
    if v.isdigit() and int(v) > 0:
        return int(v)
    if target.type == "cpu":
        return 1
    return max(1, min(target.count, len(target.claimed) or target.count))
