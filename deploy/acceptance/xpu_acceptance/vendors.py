"""Vendor facts, in one table: the only module of the workload that names a vendor.

Everything else in the workload is device-agnostic: it asks ``torch.accelerator`` for the device
and ``torch.distributed.get_default_backend_for_device`` for the collective backend. The vendor
comes in through the image (which extension is installed) and the claim (XPU_ACCEPT_VENDOR and
the device visibility variables the driver's CDI spec sets).

Each entry:
  deviceType   the torch device type the vendor's PyTorch build registers
  extensions   Python modules that register the device with torch (imported when present)
  visibility   environment variables that list the claimed devices (the CDI spec sets the first)
  toolkit      (module, attribute path) pairs naming the toolkit version, first found wins
  fallbackWarnings  regular expressions of the extension's "falling back to CPU" warnings;
               the operators stage turns them into errors (warnings.filterwarnings, which
               matches them case-insensitively from the start of the message)
"""

# Warnings PyTorch's own dispatcher and the out-of-tree extensions print when an operator has no
# kernel on the accelerator and runs on the host instead (MPS, torch_npu, torch_mlu, torch_musa,
# torch_gcu all use variants of these sentences).
COMMON_FALLBACK_WARNINGS = [
    r".*fall(s|ing)? ?back to (run )?(on )?(the )?cpu",
    r".*not (currently )?supported on the \S+ backend",
    r".*(cpu fallback|fallback to cpu)",
]


def _entry(device_type, visibility, toolkit, extensions=(), fallback_warnings=()):
    return {
        "deviceType": device_type,
        "extensions": list(extensions),
        "visibility": list(visibility),
        "toolkit": list(toolkit),
        "fallbackWarnings": list(fallback_warnings),
    }


def _extension_entry(device_type, extension, visibility, toolkit_attribute, fallback_warning=None):
    """A vendor whose out-of-tree EXTENSION registers DEVICE_TYPE with torch: the toolkit version
    is the extension's TOOLKIT_ATTRIBUTE, else its __version__; the fallback warning defaults to
    the extensions' common "on the <TYPE> backend and will fall back" sentence."""
    warning = fallback_warning or rf".*on the {device_type.upper()} backend and will fall ?back"
    return _entry(device_type, visibility,
                  [(extension, toolkit_attribute), (extension, "__version__")],
                  [extension], [warning])


VENDORS = {
    "nvidia": _entry("cuda", ["NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"],
                     [("torch", "version.cuda")]),
    "huawei": _extension_entry("npu", "torch_npu",
                               ["ASCEND_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES"],
                               "version.cann", r".*CAUTION: The operator .* will fall ?back"),
    "cambricon": _extension_entry("mlu", "torch_mlu",
                                  ["CAMBRICON_VISIBLE_DEVICES", "MLU_VISIBLE_DEVICES"],
                                  "version.cntoolkit"),
    "mthreads": _extension_entry("musa", "torch_musa",
                                 ["MTHREADS_VISIBLE_DEVICES", "MUSA_VISIBLE_DEVICES"],
                                 "version.musa"),
    "enflame": _extension_entry("gcu", "torch_gcu",
                                ["ENFLAME_VISIBLE_DEVICES", "TOPS_VISIBLE_DEVICES"],
                                "version.tops"),
    # ROCm/DTK builds of PyTorch register their devices as "cuda" (HIP underneath).
    "hygon": _entry("cuda", ["HIP_VISIBLE_DEVICES"], [("torch", "version.hip")]),
    "amd": _entry("cuda", ["HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"],
                  [("torch", "version.hip")]),
    # MetaX (MACA) builds of PyTorch present the "cuda" device type.
    "metax": _entry("cuda", ["CUDA_VISIBLE_DEVICES"], [("torch", "version.cuda")]),
    # Biren's torch_br has no toolkit attribute of its own: __version__ only.
    "biren": _entry("supa", ["SUPA_VISIBLE_DEVICES"], [("torch_br", "__version__")],
                    ["torch_br"], [r".*on the SUPA backend and will fall ?back"]),
    "cpu": _entry("cpu", [], []),
}


def all_extensions():
    """Every extension module name, in table order, without repeats."""
    out = []
    for v in VENDORS.values():
        out += [m for m in v["extensions"] if m not in out]
    return out


def all_visibility_variables():
    """Every visibility variable, in table order, without repeats."""
    out = []
    for v in VENDORS.values():
        out += [x for x in v["visibility"] if x not in out]
    return out


def fallback_warnings(vendor=None):
    """The fallback-warning patterns: the common ones plus the vendor's (or every vendor's)."""
    out = list(COMMON_FALLBACK_WARNINGS)
    for name, v in VENDORS.items():
        if vendor in (None, name):
            out += v["fallbackWarnings"]
    return out


def vendor_for_device_type(device_type):
    """The first vendor whose build registers DEVICE_TYPE ("cpu" when none does)."""
    for name, v in VENDORS.items():
        if v["deviceType"] == device_type:
            return name
    return "cpu"


def facts(vendor):
    """The table entry of VENDOR (the cpu entry for an unknown vendor)."""
    return VENDORS.get(vendor, VENDORS["cpu"])
