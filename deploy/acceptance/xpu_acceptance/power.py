"""Power stage: measured by the driver, not from inside the container.

The plugin integrates the claim's devices' telemetry (energy counter, or power x time) from
prepare to unprepare into the ResourceClaim's status.devices[].data; `xpuctl accept run` copies
joules, averageWatts, peakWatts, seconds and joulesPerToken into this stage from there.
"""

REASON = "measured by the driver (xpuctl accept run fills it from the claim's status)"


def run(ctx):
    del ctx
    return {"status": "skip", "reason": REASON}
