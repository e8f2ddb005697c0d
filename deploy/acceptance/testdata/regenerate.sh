#!/usr/bin/env bash
# Regenerates testdata/nvidia.json and testdata/huawei.json: real CPU runs of the workload,
# relabelled as two vendors (XPU_ACCEPT_VENDOR, XPU_ACCEPT_IMAGE), then given a power stage and
# stability health counts the way `xpuctl accept run` fills them from the claim's status.
#   deploy/acceptance/testdata/regenerate.sh      (from anywhere; uses scripts/acceptance-venv)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ACC=$(dirname "$HERE"); ROOT=$(cd "$ACC/../.." && pwd)
PY="$("$ROOT/scripts/acceptance-venv" | tail -1)/bin/python"
POLICY='{"convergence": {"steps": 30}, "performance": {"warmupSteps": 1, "steps": 6, "batchSize": 4, "sequenceLength": 32},
 "stability": {"durationSeconds": 2}, "collectives": {"minBytes": 4096, "maxBytes": 1048576, "gateBytes": 1048576,
 "expectedBusBandwidthGBps": {"nvidia": 0.001}}}'
run() { # VENDOR IMAGE WATTS
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && PYTHONPATH="$ACC" XPU_ACCEPT_DEVICE=cpu LOCAL_WORLD_SIZE=2 XPU_ACCEPT_VENDOR=$1 XPU_ACCEPT_IMAGE=$2 \
    XPU_ACCEPT_CLASS=training-large-memory XPU_ACCEPT_NODE=node-$1 XPU_ACCEPT_POD=accept-$1 XPU_ACCEPT_POLICY="$POLICY" \
    "$PY" -m xpu_acceptance --stages all --out "$tmp/r.json" --termination-log "$tmp/termination-log" >/dev/null)
  "$PY" - "$tmp/r.json" "$HERE/$1.json" "$3" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); watts = float(sys.argv[3])
secs = round(sum(s.get("seconds", 0) for s in r["stages"].values()), 3)
tokens = r["stages"]["performance"]["tokens"]
j = round(watts * secs, 3)
r["stages"]["power"] = {"status": "pass", "reason": "from the claim's status.devices[].data (energy counter)",
                        "joules": j, "averageWatts": watts, "peakWatts": round(watts * 1.18, 1), "seconds": secs,
                        "joulesPerToken": j / tokens, "source": "claim status"}
r["stages"]["stability"].update(healthEvents=0, xids=0)
json.dump(r, open(sys.argv[2], "w"), indent=1); open(sys.argv[2], "a").write("\n")
PYEOF
  rm -rf "$tmp"
}
run nvidia registry.example.com/acc/torch:cuda 612.5
run huawei registry.example.com/acc/torch:cann 348.0
echo "wrote $HERE/nvidia.json $HERE/huawei.json"
