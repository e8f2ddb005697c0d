#!/usr/bin/env bash
# Real containers: the upstream control plane, and nodes that run the upstream kubelet over
# containerd and runc built from pins (scripts/cluster up --runtime containerd), each with our
# plugin on a fixture host whose device nodes and driver files the node's mount namespace shows
# at their host paths. Pods run xpu-container-check (e2e/container/), which prints what the
# container sees: device nodes, variables, mounts, and the vendor library it loads by soname (the
# fake NVML, DCMI or DMI of the fixture, found through the loader cache xpu-cdi-hook wrote) with
# the devices it reports.
#
# Nodes: a2 (atlas800t-a2), h200 (hgx-h200), off (hgx-h200 with --cdi-driver-files=off), dcu
# (hygon-dcu-8-vhcu), mlu (cambricon-mlu370-x8), mx (metax-c500-8), gcu (enflame-s60-8).
# Checks:
#   - a pod with 2 of a2's NPUs, one with 4 of h200's GPUs and one with 2 devices of each other
#     vendor's node run to completion; each sees exactly its allocated devices' nodes, the
#     vendor's control node, visibility variable and driver files (for h200 those of the driver's
#     version, not the stale 535 ones), and where the fixture has a fake vendor library (NVML,
#     DCMI, DMI) it reports exactly those devices;
#   - a pod on off sees no driver file, and cannot load NVML;
#   - unprepare after the pods end removes their specs and checkpoint entries;
#   - two pods on h200 at once get disjoint devices; containerd restarted under them: they keep
#     their devices, and a new pod starts and completes;
#   - a pod whose device node vanished from the node after allocation fails with the kubelet's
#     event naming the node, and once deleted nothing is left prepared;
#   - a gang member reads its rank table at /etc/xpu-dra/gang/ inside its container;
#   - the container start overhead of a prepared spec (runtime/start-overhead.sh), reported.
#
#   e2e/upstream/runtime-trial.sh BUILD_DIR [VERSION]
#
# Prints ok:/FAIL: lines and "runtime trial: N passed, M failed"; exit 0 when all passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$(cd "${1:?usage: runtime-trial.sh BUILD_DIR [VERSION]}" && pwd)
VERSION=${2:-${XPU_UPSTREAM_VERSION:-}}
WORK=$(mktemp -d /tmp/xpu-runtime-trial.XXXXXX)
PY=/usr/bin/python3
PASS=0 FAILS=0 PIDS=()
. "$ROOT/e2e/upstream/lib.sh"
trap 'trial_finish "runtime trial" cluster_left_running; exit $?' EXIT
[ "$(id -u)" -eq 0 ] || { fail "the runtime tier needs root (mount namespaces, containerd)"; exit 1; }

UP=$("$ROOT/scripts/build-upstream" ${VERSION:+"$VERSION"} --with-kubelet | tail -1)
start=$(date +%s)
"$ROOT/scripts/cluster" up "$WORK/cluster" ${VERSION:+--version "$VERSION"} --watch-pid $$ \
  --runtime containerd --build "$BUILD" --node a2=atlas800t-a2 --node h200=hgx-h200 \
  --node off=hgx-h200,--cdi-driver-files=off --node dcu=hygon-dcu-8-vhcu \
  --node mlu=cambricon-mlu370-x8 --node mx=metax-c500-8 --node gcu=enflame-s60-8 >"$WORK/cluster.log" 2>&1 ||
  { fail "scripts/cluster up --runtime containerd (see $WORK/cluster.log)"; grep -v "^cluster: stopped" "$WORK/cluster.log" | tail -25; exit 1; }
. "$WORK/cluster/cluster.env"
ok "7 nodes Ready in $(( $(date +%s) - start )) s: the real kubelet ($VERSION) over containerd $("$RUNTIME_BIN/containerd" --version | awk '{print $3}') and runc $("$RUNTIME_BIN/runc" --version | awk 'NR==1 {print $3}')"
export KUBECONFIG=$WORK/cluster/kubeconfig
K() { "$UP/kubectl" --request-timeout=20s "$@"; }
NODES=$WORK/cluster/nodes
"$BUILD/bin/xpu-dra-controller" --kubeconfig "$KUBECONFIG" --namespace xpu-dra \
  --metrics-addr 127.0.0.1:0 >"$WORK/controller.log" 2>&1 &
PIDS+=($!)
slices() { [ "$(K get resourceslices -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | tr '\n' ' ')" = "a2 dcu gcu h200 mlu mx off " ]; }
wait_for 60 slices && ok "the controller published slices for the 7 nodes" || fail "slices for the 7 nodes"

. "$ROOT/e2e/upstream/runtime/pods.sh"

# check NAME NODE VENDOR FILES(on|off): the report against the claim's allocation.
check() {
  local name=$1 node=$2 vendor=$3 files=$4
  log_of "$name" "$node" | tail -1 >"$WORK/$name.json"
  $PY - "$WORK/$name.json" "$vendor" "$files" "$(allocated "$name")" \
    "$NODES/$node/host/fake-vendor" <<'PYEOF'
import json, sys
report_file, vendor, files, allocated, fake = sys.argv[1:6]
def out(good, msg): print(("OK|" if good else "FAIL|") + msg)
try:
    r = json.load(open(report_file))
except Exception as e:
    out(False, f"no report from the container: {e}"); sys.exit()
want = sorted(int(d.split("-")[1]) for d in allocated.split())
# Per vendor: the device nodes that name a device by its index (a DCU's or MetaX GPU's render node
# is 128 + its index), the fake library of the fixture (none for the last three), the visibility
# variable, the control node and the driver files the spec must mount.
V = {"nvidia": ("/dev/nvidia", 0, "libnvidia-ml.so.1", "NVIDIA_VISIBLE_DEVICES", "/dev/nvidiactl",
                ["/usr/lib/x86_64-linux-gnu/libcuda.so.570.158.01", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.158.01", "/usr/bin/nvidia-smi"]),
     "huawei": ("/dev/davinci", 0, "libdcmi.so", "ASCEND_VISIBLE_DEVICES", "/dev/davinci_manager",
                ["/usr/local/Ascend/driver/lib64", "/usr/local/dcmi", "/usr/local/bin/npu-smi", "/etc/hccn.conf"]),
     "hygon": ("/dev/dri/renderD", 128, "libhydmi.so", "HIP_VISIBLE_DEVICES", "/dev/kfd", ["/opt/hyhal"]),
     "cambricon": ("/dev/cambricon_dev", 0, None, "CAMBRICON_VISIBLE_DEVICES", "/dev/cambricon_ctl",
                   ["/usr/local/neuware/lib64/libcndev.so", "/usr/bin/cnmon"]),
     "metax": ("/dev/dri/renderD", 128, None, "CUDA_VISIBLE_DEVICES", "/dev/mxcd", ["/opt/mxdriver"]),
     "enflame": ("/dev/gcu", 0, None, "ENFLAME_VISIBLE_DEVICES", "/dev/gcuctl", ["/usr/local/efsmi"])}
prefix, first, soname, var, control, need = V[vendor]
seen = sorted(int(n["path"][len(prefix):]) - first for n in r["deviceNodes"]
              if n["path"].startswith(prefix) and n["path"][len(prefix):].isdigit())
out(seen == want and want, f"device nodes {[prefix + str(i + first) for i in seen]}, allocated {allocated.strip()}")
lib = next((l for l in r["libraries"] if l["soname"] == soname), {"soname": soname, "loaded": False})
mounts = [m["path"] for m in r["mounts"]]
if files == "off":
    driver = [m for m in mounts if m.startswith(("/usr/lib", "/usr/bin", "/usr/local/", "/lib/firmware"))]
    out(not driver and not lib["loaded"], f"driver files off: no driver file mounted {driver}, {lib['soname']} not loadable ({lib.get('error', '')})")
    out(bool(r["env"].get(var)), "the visibility variable is still set, for a vendor hook")
    sys.exit()
has_control = any(n["path"] == control for n in r["deviceNodes"])
out(all(n in mounts for n in need) and has_control and r["env"].get(var),
    f"driver files {need} mounted, {control} present, {var}={r['env'].get(var)}")
if vendor == "nvidia":
    nvml = json.load(open(fake + "/nvml.json"))
    uuid_of = {d["minorNumber"]: d["uuid"] for d in nvml["devices"]}
    got = sorted(d.get("uuid", "") for d in lib.get("devices", []))
    out(lib["loaded"] and got == sorted(uuid_of[i] for i in want),
        f"NVML, loaded by soname in the container, reports {lib.get('deviceCount')} GPUs: exactly the allocated ones ({lib.get('error', '')})")
    out(not [m for m in mounts if ".so.535." in m], f"none of the stale 535 driver's files mounted ({len(mounts)} mounts)")
elif vendor == "huawei":
    got = sorted(d.get("phyId", -1) for d in lib.get("devices", []))
    out(lib["loaded"] and got == want, f"DCMI, loaded by soname in the container, reports NPUs {got}: exactly the allocated ones ({lib.get('error', '')})")
elif vendor == "hygon":
    out(lib["loaded"] and lib.get("deviceCount") == len(want),
        f"DMI, loaded by soname in the container, reports {lib.get('deviceCount')} DCUs: as many as allocated ({lib.get('error', '')})")
out(r["ldCache"], "the container's loader cache was written by xpu-cdi-hook")
PYEOF
}
report() {  # the checker's OK|/FAIL| lines as ok/fail, each prefixed with $1
  local n=0 st msg
  while IFS='|' read -r st msg; do
    n=$((n + 1))
    case "$st" in OK) ok "$1: $msg" ;; FAIL) fail "$1: $msg" ;; esac
  done
  [ $n -gt 0 ] || fail "$1: the checker printed nothing"
}
spec_gone() { ! grep -rqs "$1" "$NODES/$2/cdi" "$NODES/$2/plugin-state/checkpoint.json"; }

# --- 1. one pod per vendor, and driver files off ----------------------------------------------
# NAME NODE VENDOR COUNT UNIT FILES: a claim and pod NAME for COUNT of NODE's devices.
FIRST=("npu2 a2 huawei 2 NPUs on" "gpu4 h200 nvidia 4 GPUs on" "gpuoff off nvidia 1 GPU off"
  "dcu2 dcu hygon 2 DCUs on" "mlu2 mlu cambricon 2 MLUs on" "mx2 mx metax 2 GPUs on"
  "gcu2 gcu enflame 2 GCUs on")
names=()
for p in "${FIRST[@]}"; do
  read -r name node vendor count _ <<<"$p"
  pod "$name" "$node" "$vendor.xpu.dra.dev" "$count"
  names+=("$name")
done
for p in "${FIRST[@]}"; do
  read -r name node _ <<<"$p"
  if wait_for 90 is_phase "$name" Succeeded; then
    ok "pod $name on $node ran to completion in a real container"
  else
    fail "pod $name on $node: phase $(phase "$name"); $(K get events --field-selector involvedObject.name="$name" -o jsonpath='{range .items[*]}{.message}{"; "}{end}' | tail -c 400)"
  fi
done
for p in "${FIRST[@]}"; do
  read -r name node vendor count unit files <<<"$p"
  report "$name ($node, $count $unit)" < <(check "$name" "$node" "$vendor" "$files")
done

# --- 2. unprepare when the pods end ---------------------------------------------------------------
uids=()
for p in "${FIRST[@]}"; do
  read -r name node _ <<<"$p"
  uids+=("$(claim_uid "$name"):$node")
done
K delete pod "${names[@]}" --wait=false >/dev/null
gone=1
for u in "${uids[@]}"; do wait_for 60 spec_gone "${u%%:*}" "${u#*:}" || gone=0; done
[ $gone -eq 1 ] && ok "the pods deleted: their CDI specs and checkpoint entries are gone" \
  || fail "specs left after the pods were deleted: $(ls "$NODES"/*/cdi)"
K delete resourceclaim "${names[@]}" --wait=false >/dev/null

# --- 3. two pods at once, and containerd restarted under them -----------------------------------
pod long1 h200 nvidia.xpu.dra.dev 2 --every 1
pod long2 h200 nvidia.xpu.dra.dev 2 --every 1
both_running() { is_phase long1 Running && is_phase long2 Running && [ -n "$(log_of long1 h200)" ] && [ -n "$(log_of long2 h200)" ]; }
if wait_for 90 both_running; then
  report "long1 (h200, 2 GPUs, running)" < <(check long1 h200 nvidia on)
  report "long2 (h200, 2 GPUs, running)" < <(check long2 h200 nvidia on)
  report "two pods at once" < <($PY - "$(allocated long1)" "$(allocated long2)" <<'PYEOF'

import sys
a, b = set(sys.argv[1].split()), set(sys.argv[2].split())
print(("OK|" if a and b and not a & b else "FAIL|") + f"disjoint devices: {sorted(a)} and {sorted(b)}")
PYEOF
  )
  node_pid=$(awk '$1=="node-h200" {print $2}' "$WORK/cluster/pids")
  lines1=$(log_of long1 h200 | wc -l)
  kill -USR1 "$node_pid"
  restarted() { grep -q "containerd restarted" "$WORK/cluster/logs/node-h200.log"; }
  grew() { [ "$(log_of long1 h200 | wc -l)" -gt $((lines1 + 2)) ]; }
  if wait_for 60 restarted && wait_for 30 grew && is_phase long1 Running && is_phase long2 Running; then
    ok "containerd restarted: both pods keep running"
    report "long1 after the restart" < <(check long1 h200 nvidia on)
  else
    fail "containerd restart: long1 $(phase long1), long2 $(phase long2); $(tail -3 "$WORK/cluster/logs/node-h200.log")"
  fi
  pod after h200 nvidia.xpu.dra.dev 2
  wait_for 90 is_phase after Succeeded && ok "a new pod starts and completes after the restart" \
    || fail "pod after the restart: $(phase after)"
  report "after (h200, 2 GPUs)" < <(check after h200 nvidia on)
  # The container start overhead of long1's spec, in h200's namespace (docs/performance.md, "Kubelet plugin").
  spec=$(grep -ls "$(claim_uid long1)" "$NODES/h200/cdi"/*.json | head -1)
  devs=$($PY -c 'import json,sys; s=json.load(open(sys.argv[1])); print(" ".join(s["kind"] + "=" + d["name"] for d in s["devices"]))' "$spec" 2>/dev/null)
  if [ -n "$devs" ] && line=$(nsenter -t "$node_pid" -m "$ROOT/e2e/upstream/runtime/start-overhead.sh" \
      "$RUNTIME_BIN" "$BUILD/bin/xpu-container-check" "$NODES/h200/cdi" "$WORK/start" 20 $devs 2>&1); then
    ok "container start with long1's spec against without (runc): $line"
  else
    fail "container start overhead: ${line:-no spec for long1 in $NODES/h200/cdi}"
  fi
else
  fail "long1 and long2 running at once: $(phase long1), $(phase long2)"
fi
K delete pod long1 long2 after --wait=false >/dev/null 2>&1

# --- 4. a device node that vanished after allocation ---------------------------------------------
# The claim asks for npu-5 by name; its node leaves the a2 node's /dev (the plugin's view of the
# host still has it: the node fell off after discovery) before the container is made.
a2_pid=$(awk '$1=="node-a2" {print $2}' "$WORK/cluster/pids")
nsenter -t "$a2_pid" -m rm -f /dev/davinci5
SELECTOR='device.attributes["xpu.dra.dev"].index == 5' pod gone5 a2 huawei.xpu.dra.dev 1
named() {  # read whole, then matched: a grep that stops early fails a pipeline under pipefail
  local events
  events=$(K get events --field-selector involvedObject.name=gone5 -o jsonpath='{range .items[*]}{.message}{"\n"}{end}')
  [[ $events == *"/dev/davinci5"* ]]
}
if wait_for 60 named; then
  ok "the pod on a vanished device fails with the kubelet's event naming it: $(K get events --field-selector involvedObject.name=gone5 -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep /dev/davinci5 | head -1 | cut -c1-200)"
else
  fail "no event naming /dev/davinci5: $(K get events --field-selector involvedObject.name=gone5 -o jsonpath='{range .items[*]}{.reason}: {.message}{"; "}{end}' | tail -c 400)"
fi
uid=$(claim_uid gone5)
K delete pod gone5 --wait=false >/dev/null
wait_for 60 spec_gone "$uid" a2 && ok "deleted: nothing of its claim is left prepared" \
  || fail "the vanished device's claim is still prepared"
K delete resourceclaim gone5 --wait=false >/dev/null

# --- 5. a gang member's rank table inside its container -----------------------------------------
K apply -f - >/dev/null <<YAML
apiVersion: xpu.dra.dev/v1alpha1
kind: AcceleratorGang
metadata: {name: rt, namespace: default}
spec:
  nodes: 1
  devicesPerNode: 2
  capabilityClass: huawei.xpu.dra.dev
  maxTier: any
  nodeSelector: {kubernetes.io/hostname: "a2"}
YAML
gang_objects() { K get resourceclaim rt-gang >/dev/null && K get resourceclaimtemplate rt-member >/dev/null; }
if wait_for 60 gang_objects; then
  K apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: member0, namespace: default}
spec:
  restartPolicy: Never
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: check
    image: docker.io/xpu-dra/container-check:test
    imagePullPolicy: Never
    args: ["--file", "/etc/xpu-dra/gang/rank_table.json", "--file", "/etc/xpu-dra/gang/hostfile"]
    resources: {claims: [{name: gang}, {name: devs}]}
  resourceClaims:
  - {name: gang, resourceClaimName: rt-gang}
  - {name: devs, resourceClaimTemplateName: rt-member}
YAML
  if wait_for 90 is_phase member0 Succeeded; then
    log_of member0 a2 | tail -1 >"$WORK/member0.json"
    report "gang member" < <($PY - "$WORK/member0.json" <<'PYEOF'

import json, sys
r = json.load(open(sys.argv[1]))
table = r["files"].get("/etc/xpu-dra/gang/rank_table.json")
print(("OK|" if (table or "").startswith("{") else "FAIL|") +
      f"reads its HCCL rank table at /etc/xpu-dra/gang/rank_table.json inside a real container: {str(table)[:80]}")
env = r["env"]
print(("OK|" if env.get("RANK_TABLE_FILE", "").startswith("/etc/xpu-dra/gang/") and env.get("WORLD_SIZE") == "2" else "FAIL|") +
      f"RANK_TABLE_FILE={env.get('RANK_TABLE_FILE')}, WORLD_SIZE={env.get('WORLD_SIZE')}, NODE_RANK={env.get('NODE_RANK')}")
PYEOF
    )
  else
    fail "gang member pod: $(phase member0); $(K get events --field-selector involvedObject.name=member0 -o jsonpath='{range .items[*]}{.message}{"; "}{end}' | tail -c 400)"
  fi
  K delete pod member0 --wait=false >/dev/null
else
  fail "the gang's claim rt-gang and template rt-member: $(K get acceleratorgang rt -o jsonpath='{.status.phase} {.status.conditions[*].message}')"
fi
