#!/usr/bin/env bash
# The acceptance kit's upstream tier: `xpuctl accept run` for the capability class
# training-large-memory over two vendors' fixture nodes, through the real scheduler, controller
# and plugins, with the workload (deploy/acceptance, CPU torch) in real containers: the upstream
# kubelet over containerd and runc (scripts/cluster up --runtime containerd), then
# `xpuctl accept report`.
#
# Nodes: a2 (atlas800t-a2), h1 and h2 (hgx-h200); plugins with telemetry at 1 Hz and the claims'
# energy written every second. The image (accept/build-workload-image.sh) is a shell: the pod patch
# (accept/pod-patch.json, to --pod-patch, merged into render's workload container by name) mounts
# the node's /usr, the virtual environment of scripts/acceptance-venv and deploy/acceptance
# read-only, uses the host network (the nodes' CNI is loopback only) and sets
# XPU_ACCEPT_DEVICE=cpu. Both vendors use the
# same image, so the report's image evidence is the same for the two. The API server cannot reach
# these kubelets (they listen on loopback, their address is the machine's), so run collects each
# result from the pod status: the workload's summary.
# Runs (policy accept/policy.json: tiny sizes):
#   1. --vendors nvidia,huawei, every stage, --label-nodes, LOCAL_WORLD_SIZE=2 (node collectives);
#   2. --vendors nvidia --gang 2 --stages collectives: gloo across h1 and h2.
# Checks (accept/check.py):
#   - both runs exit 0; every stage of each vendor's result passed (power from the claim's energy);
#   - each claim's energy in its status.devices[].data (watched while the claims live, as the
#     claim controller drops it when it deallocates a finished pod's claim): the fixture's power of
#     each allocated device (nvml.json powerMilliwatts, dcmi.json powerDeciwatts) times its seconds
#     held, within 5 %, from NVML's energy counter for the GPUs and power x time for the NPUs;
#     the result's joules and seconds are the claim's;
#   - the gang run's collectives: scope gang, world size 2 (nnodes x localWorldSize in a summary);
#   - the nodes that passed got xpu.dra.dev/accepted.training-large-memory;
#   - after each run no Job, pod, claim, claim template, gang or new namespace is left;
#   - `xpuctl accept report --baseline nvidia -o html` writes one page with both vendors;
#   - nothing of the cluster is left running.
#
#   e2e/upstream/accept-trial.sh BUILD_DIR [VERSION]
#
# Needs root. Prints ok:/FAIL: lines and "accept trial: N passed, M failed"; exit 0 when all passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: accept-trial.sh BUILD_DIR [VERSION]}" && pwd)
VERSION=${2:-${XPU_UPSTREAM_VERSION:-}}
WORK=$(mktemp -d /tmp/xpu-accept-trial.XXXXXX)
CLASS=training-large-memory
PASS=0 FAILS=0 PIDS=()
. "$ROOT/e2e/upstream/lib.sh"
trap 'trial_finish "accept trial" cluster_left_running; exit $?' EXIT
[ "$(id -u)" -eq 0 ] || { fail "the accept tier needs root (mount namespaces, containerd)"; exit 1; }
XPUCTL=$BUILD/bin/xpuctl
# Read whole, then matched: under pipefail grep -q exiting early would fail the pipeline.
run_help=$("$XPUCTL" accept run --help 2>&1)
[[ $run_help == *--pod-patch* ]] || { fail "$XPUCTL has no 'accept run ... --pod-patch'"; exit 1; }
[ -f "$ROOT/deploy/acceptance/xpu_acceptance/__main__.py" ] || { fail "no workload in deploy/acceptance/xpu_acceptance"; exit 1; }

start=$(date +%s)
VENV=$("$ROOT/scripts/acceptance-venv" 2>"$WORK/venv.log" | tail -1)
[ -x "$VENV/bin/python3" ] || { fail "scripts/acceptance-venv (see $WORK/venv.log)"; exit 1; }
UP=$("$ROOT/scripts/build-upstream" ${VERSION:+"$VERSION"} --with-kubelet 2>"$WORK/build-upstream.log" | tail -1)
[ -x "$UP/kubectl" ] || { fail "scripts/build-upstream --with-kubelet (see $WORK/build-upstream.log)"; exit 1; }
IMAGE=$WORK/accept-workload.tar
"$ROOT/e2e/upstream/accept/build-workload-image.sh" "$IMAGE" "$VENV" >"$WORK/image.log" 2>&1 ||
  { fail "the workload image (see $WORK/image.log)"; exit 1; }
# Telemetry at 1 Hz, and the claims' energy written every second while held (and at unprepare).
# The atlas800t-a2 fixture has its (fake) DCMI in /usr/local/dcmi, which the plugin does not search.
PF=--telemetry-interval=1s,--claim-status-interval=1s
DCMI=--vendor-lib-dir=$WORK/cluster/nodes/a2/host/usr/local/dcmi
"$ROOT/scripts/cluster" up "$WORK/cluster" ${VERSION:+--version "$VERSION"} --watch-pid $$ \
  --runtime containerd --build "$BUILD" --node a2=atlas800t-a2,$PF,$DCMI \
  --node h1=hgx-h200,$PF --node h2=hgx-h200,$PF \
  >"$WORK/cluster.log" 2>&1 ||
  { fail "scripts/cluster up --runtime containerd (see $WORK/cluster.log)"; grep -v "^cluster: stopped" "$WORK/cluster.log" | tail -25; exit 1; }
. "$WORK/cluster/cluster.env"
NODES=$WORK/cluster/nodes
export KUBECONFIG=$WORK/cluster/kubeconfig
K() { "$UP/kubectl" --request-timeout=20s "$@"; }
imported=1
for n in a2 h1 h2; do
  "$RUNTIME_BIN/ctr" --address "$NODES/$n/containerd/containerd.sock" -n k8s.io images import "$IMAGE" \
    >>"$WORK/import.log" 2>&1 || imported=0
done
[ $imported = 1 ] && ok "3 nodes Ready, the workload image imported, in $(( $(date +%s) - start )) s (containerd $("$RUNTIME_BIN/containerd" --version | awk '{print $3}'))" ||
  { fail "ctr images import of the workload image (see $WORK/import.log)"; exit 1; }
# One leaf per vendor: a gang fits whatever tier render asks for.
K label node h1 h2 topology.xpu.dra.dev/leaf=leaf-h >/dev/null
K label node a2 topology.xpu.dra.dev/leaf=leaf-a >/dev/null
"$BUILD/bin/xpu-dra-controller" --kubeconfig "$KUBECONFIG" --namespace xpu-dra \
  --config "$ROOT/e2e/upstream/accept/controller.yaml" --metrics-addr 127.0.0.1:0 >"$WORK/controller.log" 2>&1 &
PIDS+=($!)
slices() { [ "$(K get resourceslices -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | tr '\n' ' ')" = "a2 h1 h2 " ]; }
classes() { K get deviceclass "$CLASS.nvidia" "$CLASS.huawei" >/dev/null; }
wait_for 60 slices && wait_for 30 classes && ok "the controller published slices for a2, h1, h2 and the classes of $CLASS" ||
  { fail "slices for the three nodes and DeviceClasses $CLASS.*: $(tail -3 "$WORK/controller.log")"; exit 1; }

# Every claim as it changes, to the end (the DELETED event carries the last status): the energy
# the plugin wrote is read back from here, as run deletes the claims when it cleans up.
"$UP/kubectl" get resourceclaims -A --watch --output-watch-events -o json >"$WORK/claims.watch" 2>"$WORK/claims.watch.err" &
PIDS+=($!)
K get namespaces -o name | sort >"$WORK/namespaces"
nothing_left() {
  [ -z "$(K get jobs,pods,resourceclaimtemplates,resourceclaims,acceleratorgangs -A -o name)" ] &&
    [ "$(K get namespaces -o name | sort)" = "$(cat "$WORK/namespaces")" ]
}

# accept_run NAME VARS ARG...: xpuctl accept run with the trial's class, config and policy, ARGs,
# and the pod patch accept/pod-patch.json with the variables VARS ("NAME=VALUE ...") added to the
# workload's env; its output in WORK/NAME.out, its results in WORK/NAME/. Checks the exit code and
# the clean-up.
accept_run() {
  local name=$1 vars=$2 rc t0
  shift 2
  local common=(--class "$CLASS" --config "$ROOT/e2e/upstream/accept/controller.yaml"
    --policy "$ROOT/e2e/upstream/accept/policy.json" "$@")
  mkdir -p "$WORK/$name"
  # The paths known only now, and VARS; render's container and env stay (merged by name).
  $PY - "$ROOT/e2e/upstream/accept/pod-patch.json" "$VENV" "$ROOT/deploy/acceptance" $vars \
    >"$WORK/$name.patch.json" 2>"$WORK/$name.patch.err" <<'PYEOF' ||
import json, sys
template, venv, acceptance, *variables = sys.argv[1:]
patch = json.loads(open(template).read().replace("@VENV@", venv).replace("@ACCEPTANCE@", acceptance))
patch["containers"][0]["env"] += [dict(zip(("name", "value"), v.split("=", 1))) for v in variables]
json.dump(patch, sys.stdout, indent=1)
PYEOF
    { fail "the pod patch of $name: $(tail -c 400 "$WORK/$name.patch.err")"; return; }
  t0=$(date +%s)
  timeout 660 "$XPUCTL" accept run "${common[@]}" --pod-patch "$WORK/$name.patch.json" \
    --kubeconfig "$KUBECONFIG" --timeout 10m --results-dir "$WORK/$name" >"$WORK/$name.out" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    ok "accept run $name ($*): exit 0 in $(( $(date +%s) - t0 )) s, $(ls "$WORK/$name" | wc -l) results"
  else
    fail "accept run $name ($*): exit $rc after $(( $(date +%s) - t0 )) s: $(tail -c 600 "$WORK/$name.out" | tr '\n' ' ')"
  fi
  if wait_for 60 nothing_left; then
    ok "accept run $name cleaned up: no Job, pod, claim, claim template, gang or namespace left"
  else
    fail "accept run $name left: $(K get jobs,pods,resourceclaimtemplates,resourceclaims,acceleratorgangs,namespaces -A -o name | tr '\n' ' ' | head -c 400)"
  fi
}
report() {  # the checker's OK|/FAIL| lines as ok/fail, each prefixed with $1
  local n=0 st msg
  while IFS='|' read -r st msg; do
    n=$((n + 1))
    case "$st" in OK) ok "$1: $msg" ;; FAIL) fail "$1: $msg" ;; *) fail "$1: $st $msg" ;; esac
  done
  [ $n -gt 0 ] || fail "$1: the checker printed nothing"
}

# --- 1. both vendors, every stage -------------------------------------------------------------
# LOCAL_WORLD_SIZE=2: the node-scope collectives in 2 processes (one per CPU; a gang member's
# comes from its CDI spec).
accept_run run1 LOCAL_WORLD_SIZE=2 --vendors nvidia,huawei \
  --stages environment,operators,convergence,performance,power,stability,collectives --label-nodes
# --- 2. a gang of two nvidia nodes, the collectives across them ------------------------------
accept_run gang "" --vendors nvidia --gang 2 --stages collectives
kill "${PIDS[-1]}" 2>/dev/null
K get nodes -o json >"$WORK/nodes.json"
report "results" < <($PY "$ROOT/e2e/upstream/accept/check.py" "$WORK" "$NODES" "$CLASS" 2>&1)

# --- 3. the report ----------------------------------------------------------------------------
if "$XPUCTL" accept report "$WORK"/run1/*.json --baseline nvidia -o html >"$WORK/report.html" 2>"$WORK/report.err"; then
  page() {
    $PY - "$WORK/report.html" <<'PYEOF'
import sys
t = open(sys.argv[1]).read()
need = {"<html": "<html" in t.lower(), "nvidia": "nvidia" in t, "huawei": "huawei" in t, "<svg": "<svg" in t,
        "no <script": "<script" not in t.lower()}
miss = [k for k, v in need.items() if not v]
print(("FAIL|missing " + ", ".join(miss)) if miss else f"OK|one page, {len(t)} bytes, both vendors, inline SVG, no script")
PYEOF
  }
  report "accept report --baseline nvidia -o html" < <(page)
else
  fail "accept report: $(tail -c 400 "$WORK/report.err")"
fi
