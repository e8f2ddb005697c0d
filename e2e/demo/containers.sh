#!/usr/bin/env bash
# The demo's real containers: a control plane and two nodes that run containers (the upstream
# kubelet over containerd and runc, scripts/cluster up --runtime containerd) on the Atlas 800T A2
# and HGX H200 fixture hosts, the xpu-dra controller, and three pods of xpu-container-check: 2
# NPUs, 4 GPUs, and 2 GPUs. Each prints what its container sees; the results go to one JSON file
# for the demo's report (xpu-demo --containers). Stops everything it started.
#
#   e2e/demo/containers.sh OUT.json BUILD_DIR
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTFILE=${1:?usage: containers.sh OUT.json BUILD_DIR}
BUILD=$(cd "${2:?usage: containers.sh OUT.json BUILD_DIR}" && pwd)
WORK=$(mktemp -d /tmp/xpu-demo-containers.XXXXXX)
PY=/usr/bin/python3
CONTROLLER=""
cleanup() {
  [ -n "$CONTROLLER" ] && kill "$CONTROLLER" 2>/dev/null
  "$ROOT/scripts/cluster" down "$WORK/cluster" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
. "$ROOT/e2e/upstream/lib.sh"
"$ROOT/scripts/cluster" up "$WORK/cluster" --watch-pid $$ --runtime containerd --build "$BUILD" \
  --node a2=atlas800t-a2 --node h200=hgx-h200 >"$WORK/cluster.log" 2>&1 ||
  { echo "containers: scripts/cluster up --runtime containerd failed:" >&2
    grep -v '^cluster: stopped' "$WORK/cluster.log" | tail -25 >&2; exit 1; }
. "$WORK/cluster/cluster.env"
export KUBECONFIG=$WORK/cluster/kubeconfig
K() { "$BIN/kubectl" --request-timeout=20s "$@"; }
NODES=$WORK/cluster/nodes
. "$ROOT/e2e/upstream/runtime/pods.sh"
"$BUILD/bin/xpu-dra-controller" --kubeconfig "$KUBECONFIG" --namespace xpu-dra \
  --metrics-addr 127.0.0.1:0 >"$WORK/controller.log" 2>&1 &
CONTROLLER=$!
slices() { [ "$(K get resourceslices -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | tr '\n' ' ')" = "a2 h200 " ]; }
wait_for 60 slices || { echo "containers: no slices for the nodes" >&2; exit 1; }
pods="train-npu:a2:huawei.xpu.dra.dev:2 train-gpu:h200:nvidia.xpu.dra.dev:4 infer-gpu:h200:nvidia.xpu.dra.dev:2"
for p in $pods; do
  IFS=: read -r name node class count <<<"$p"
  pod "$name" "$node" "$class" "$count"
done
for p in $pods; do
  IFS=: read -r name node _ <<<"$p"
  wait_for 90 is_phase "$name" Succeeded || echo "containers: pod $name: $(phase "$name")" >&2
  log_of "$name" "$node" | tail -1 >"$WORK/$name.json"
done
runtime="containerd $("$RUNTIME_BIN/containerd" --version | awk '{print $3}'), runc $("$RUNTIME_BIN/runc" --version | awk 'NR==1 {print $3}'), kubelet $VERSION"
$PY - "$OUTFILE" "$runtime" "$WORK" $pods <<'PYEOF'
import json, sys
out, runtime, work, pods = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
result = {"runtime": runtime, "pods": []}
for p in pods:
    name, node, _, _ = p.split(":")
    try:
        seen = json.load(open(f"{work}/{name}.json"))
    except Exception:
        seen = None
    result["pods"].append({"pod": "default/" + name, "node": node,
                           "allocated": open(f"{work}/{name}.allocated").read().split(), "seen": seen})
json.dump(result, open(out, "w"), indent=1)
PYEOF
echo "containers: $(echo $pods | wc -w) pods ran in real containers ($runtime); $OUTFILE"
