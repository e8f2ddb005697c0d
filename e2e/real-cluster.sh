#!/usr/bin/env bash
# End-to-end checks of an installed xpu-dra against a real cluster (the one KUBECONFIG, or
# --context, names). Needs only bash and kubectl; it changes nothing but a namespace of its own.
#
# 1. the controller Deployment and the plugin DaemonSet are rolled out, and a controller holds
#    the leader Lease;
# 2. every node that runs a plugin pod has its NodeInventory, its plugin Lease and at least one
#    ResourceSlice of the driver (a node without accelerators publishes one empty slice);
# 3. the controller's DeviceClasses exist, including every class the workload example names;
# 4. a workload from deploy/examples/ (picked from what the cluster publishes: four NVLink-joined
#    NVIDIA GPUs, else eight Ascend NPUs in the publishing mode in use) runs in a fresh namespace:
#    its Job's pod must be scheduled and run, and its ResourceClaim must have been allocated
#    devices of the driver on the pod's node;
# 5. the namespace is deleted again (the kubelet unprepares the claim).
#
# Run `e2e/real-cluster.sh --help` for the flags. Exit status: 0 all checks passed, 1 a check
# failed, 2 bad usage or kubectl/cluster not usable.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: e2e/real-cluster.sh [flags]

Checks an xpu-dra installation (helm install xpu-dra deploy/helm/xpu-dra -n xpu-dra, or
kubectl apply -f deploy/xpu-dra.yaml) on the cluster KUBECONFIG names, then runs one example
workload from deploy/examples/ and cleans up.

Flags:
  --namespace NS         namespace of the installation (default: xpu-dra)
  --driver NAME          the DRA driver name (default: xpu.dra.dev)
  --context NAME         kubeconfig context passed to kubectl (default: the current one)
  --example FILE|none    the workload to run (default: chosen from the published devices:
                         deploy/examples/gpu-4-nvlink.yaml, npu-8-attributes.yaml or
                         npu-8-groups.yaml); "none" checks the installation only
  --test-namespace NS    namespace for the workload (default: xpu-dra-e2e-<random>; created,
                         and deleted at the end unless it existed before)
  --timeout SECONDS      limit for each wait (default: 300)
  --keep                 leave the workload and its namespace in place
  -h, --help             this text

Environment: KUBECONFIG (as for kubectl). The plugin and controller objects are found by their
chart labels app.kubernetes.io/name=xpu-dra and app.kubernetes.io/component=plugin|controller.
EOF
}

ns=xpu-dra
driver=xpu.dra.dev
context=
example=
test_ns=
timeout=300
keep=0
repo_root=$(cd "$(dirname "$0")/.." && pwd)

while [ $# -gt 0 ]; do
  case "$1" in
    --namespace) ns=${2:?--namespace needs a value}; shift 2 ;;
    --driver) driver=${2:?--driver needs a value}; shift 2 ;;
    --context) context=${2:?--context needs a value}; shift 2 ;;
    --example) example=${2:?--example needs a value}; shift 2 ;;
    --test-namespace) test_ns=${2:?--test-namespace needs a value}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
    --keep) keep=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "real-cluster: unknown flag: $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$timeout" in
  '' | *[!0-9]*) echo "real-cluster: --timeout: expected a number of seconds, got \"$timeout\"" >&2; exit 2 ;;
esac

# ---- helpers ----

k() {
  if [ -n "$context" ]; then kubectl --context "$context" "$@"; else kubectl "$@"; fi
}
step() { printf '\n==> %s\n' "$*"; }
ok() { printf '    ok: %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
fail() {
  printf '\nreal-cluster: FAIL: %s\n' "$*" >&2
  exit 1
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 2 s until it succeeds; fails naming
# WHAT after SECONDS.
wait_until() {
  local limit=$1 what=$2 start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $((SECONDS - start)) -ge "$limit" ]; then
      fail "timed out after ${limit}s waiting for $what"
    fi
    sleep 2
  done
}

# The names of objects of KIND in NS carrying the chart labels of COMPONENT.
component_objects() {
  local kind=$1 component=$2
  k get "$kind" -n "$ns" \
    -l "app.kubernetes.io/name=xpu-dra,app.kubernetes.io/component=$component" \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}

# ---- 0. kubectl and the cluster ----

step "cluster"
command -v kubectl >/dev/null 2>&1 || { echo "real-cluster: kubectl not found on PATH" >&2; exit 2; }
if ! version=$(k get --raw /version 2>&1); then
  echo "real-cluster: cannot reach the cluster with kubectl${context:+ --context $context}: $version" >&2
  exit 2
fi
git_version=
if [[ $version =~ \"gitVersion\":\ *\"([^\"]*)\" ]]; then git_version=${BASH_REMATCH[1]}; fi
note "server ${git_version:-(version unknown)}, context ${context:-$(k config current-context 2>/dev/null || echo '?')}"
apis=$(k api-versions) || fail "kubectl api-versions failed"
if ! grep -qx 'resource.k8s.io/v1' <<<"$apis"; then
  fail "the API server does not serve resource.k8s.io/v1 (Kubernetes 1.34 or later is needed)"
fi
ok "resource.k8s.io/v1 is served"
for crd in nodeinventories.xpu.dra.dev acceleratorgangs.xpu.dra.dev; do
  k get crd "$crd" -o name >/dev/null 2>&1 || fail "CRD $crd is missing: is the chart installed?"
done
ok "CRDs nodeinventories.xpu.dra.dev and acceleratorgangs.xpu.dra.dev exist"

# ---- 1. controller and plugin ----

step "controller and plugin in namespace $ns"
k get namespace "$ns" -o name >/dev/null 2>&1 || fail "namespace $ns does not exist (--namespace?)"

# rolled_out KIND COMPONENT TITLE: every KIND (deployment, daemonset) of the chart's COMPONENT
# exists and has rolled out.
rolled_out() {
  local kind=$1 component=$2 title=$3 objects o
  objects=$(component_objects "${kind}s" "$component")
  [ -n "$objects" ] || fail "no $component $title labelled app.kubernetes.io/component=$component in $ns"
  for o in $objects; do
    k rollout status "$kind/$o" -n "$ns" --timeout="${timeout}s" >/dev/null \
      || fail "$kind $o did not roll out within ${timeout}s (kubectl -n $ns describe $kind $o)"
    ok "$kind $o rolled out"
  done
}
rolled_out deployment controller Deployment
rolled_out daemonset plugin DaemonSet

leader_holder() {
  local holder
  holder=$(k get lease xpu-dra-controller -n "$ns" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) || return 1
  [ -n "$holder" ] && echo "$holder"
}
wait_until "$timeout" "a controller to hold the Lease $ns/xpu-dra-controller" leader_holder
ok "controller leader: $(leader_holder)"

# Nodes with a running plugin pod.
plugin_nodes=$(k get pods -n "$ns" \
  -l "app.kubernetes.io/name=xpu-dra,app.kubernetes.io/component=plugin" \
  --field-selector status.phase=Running \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}') || fail "cannot list the plugin pods in $ns"
plugin_nodes=$(sort -u <<<"$plugin_nodes")
[ -n "$plugin_nodes" ] || fail "no plugin pod is Running in $ns (is any node selected by the DaemonSet?)"
note "plugin running on $(wc -w <<<"$plugin_nodes") node(s): ${plugin_nodes//$'\n'/ }"

# ---- 2. NodeInventories, plugin Leases and ResourceSlices ----

step "NodeInventories, plugin Leases and ResourceSlices of driver $driver"
slices_of() {  # slices_of NODE: the names of the driver's slices of NODE
  k get resourceslices --field-selector "spec.driver=$driver,spec.nodeName=$1" \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}'
}
has_slices() { [ -n "$(slices_of "$1")" ]; }
for node in $plugin_nodes; do
  wait_until "$timeout" "NodeInventory $node" k get nodeinventories.xpu.dra.dev "$node" -o name
  wait_until "$timeout" "plugin Lease $ns/xpu-dra-plugin-$node" k get lease "xpu-dra-plugin-$node" -n "$ns" -o name
  wait_until "$timeout" "a ResourceSlice of driver $driver on node $node" has_slices "$node"
  inventory_devices=$(k get nodeinventories.xpu.dra.dev "$node" -o jsonpath='{.status.devices[*].name}' | wc -w)
  model=$(k get nodeinventories.xpu.dra.dev "$node" -o jsonpath='{.status.serverModel}')
  published=$(k get resourceslices --field-selector "spec.driver=$driver,spec.nodeName=$node" \
    -o jsonpath='{.items[*].spec.devices[*].name}' | wc -w)
  ok "$node: NodeInventory (${model:-no server model}, $inventory_devices device(s)), Lease," \
    "$(slices_of "$node" | wc -l) slice(s) with $published published device(s)"
done

# ---- 3. DeviceClasses ----

step "DeviceClasses"
classes=$(k get deviceclasses -l app.kubernetes.io/managed-by=xpu-dra-controller \
  -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[ -n "$classes" ] || fail "no DeviceClass labelled app.kubernetes.io/managed-by=xpu-dra-controller"
ok "$(wc -l <<<"$classes") DeviceClasses managed by the controller"

# ---- 4. choose and run a workload ----

# One line per published device of the driver on NODE:
#   <name> <vendor> <scaleUpDomain> <groupSize or -> <taint count>
devices_of() {
  k get resourceslices --field-selector "spec.driver=$driver,spec.nodeName=$1" \
    -o jsonpath='{range .items[*].spec.devices[*]}{.name}{" "}{.attributes.vendor.string}{" "}{.attributes.scaleUpDomain.string}{" "}{.attributes.groupSize.int}{"\n"}{end}' |
    while read -r name vendor domain group; do
      [ -n "$name" ] && printf '%s %s %s %s\n' "$name" "${vendor:--}" "${domain:--}" "${group:--}"
    done
}

# has_four_gpus DEVICES: four single NVIDIA GPUs in one scaleUpDomain.
has_four_gpus() {
  local name vendor domain group
  local -A per_domain=()
  while read -r name vendor domain group; do
    [ -n "$name" ] || continue
    [ "$vendor" = nvidia ] || continue
    [ "$group" = - ] || [ "$group" = 1 ] || continue
    per_domain[$domain]=$((${per_domain[$domain]:-0} + 1))
    [ "${per_domain[$domain]}" -lt 4 ] || return 0
  done <<<"$1"
  return 1
}
# has_eight_npus DEVICES: eight single Ascend NPUs, or a published group of eight.
has_eight_npus() {
  local name vendor domain group singles=0
  while read -r name vendor domain group; do
    [ "$vendor" = huawei ] || continue
    [ "$group" != 8 ] || return 0
    if [ "$group" = - ] || [ "$group" = 1 ]; then singles=$((singles + 1)); fi
  done <<<"$1"
  [ $singles -ge 8 ]
}

if [ -z "$example" ]; then
  step "choosing a workload from what the cluster publishes"
  gpu_node='' npu_node='' mode=attributes
  for node in $plugin_nodes; do
    devices=$(devices_of "$node")
    [ -n "$devices" ] || continue
    # groupSize is published on every device in groups mode only.
    if grep -q ' [0-9][0-9]*$' <<<"$devices"; then mode=groups; fi
    if [ -z "$gpu_node" ] && has_four_gpus "$devices"; then gpu_node=$node; fi
    if [ -z "$npu_node" ] && has_eight_npus "$devices"; then npu_node=$node; fi
  done
  note "publishing mode in use: $mode"
  if [ -n "$gpu_node" ]; then
    example=$repo_root/deploy/examples/gpu-4-nvlink.yaml
    note "node $gpu_node has four NVIDIA GPUs in one scaleUpDomain"
  elif [ -n "$npu_node" ]; then
    example=$repo_root/deploy/examples/npu-8-$mode.yaml
    note "node $npu_node has eight Ascend NPUs"
  else
    fail "no node publishes four NVIDIA GPUs in one scaleUpDomain or eight Ascend NPUs;" \
      "pass --example FILE for a workload that fits this cluster, or --example none"
  fi
fi

if [ "$example" = none ]; then
  printf '\nreal-cluster: installation checks passed (no workload run: --example none)\n'
  exit 0
fi
[ -f "$example" ] || fail "example $example does not exist"
note "workload: $example"

# Every DeviceClass the example names must exist.
named_classes=$(sed -n 's/^[[:space:]]*deviceClassName:[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$example" | sort -u)
while read -r class; do
  [ -n "$class" ] || continue
  k get deviceclass "$class" -o name >/dev/null 2>&1 \
    || fail "DeviceClass $class (named by $example) does not exist"
  ok "DeviceClass $class exists"
done <<<"$named_classes"

step "running the workload"
created_ns=0
if [ -z "$test_ns" ]; then
  test_ns=xpu-dra-e2e-$(date +%s)-$RANDOM
fi
if ! k get namespace "$test_ns" -o name >/dev/null 2>&1; then
  k create namespace "$test_ns" >/dev/null
  created_ns=1
fi
note "namespace $test_ns"

claims_log=$(mktemp)
watch_pid=
cleanup() {
  local rc=$?
  if [ -n "$watch_pid" ]; then kill "$watch_pid" 2>/dev/null || true; fi
  rm -f "$claims_log"
  if [ $keep -eq 1 ]; then
    printf '\nreal-cluster: --keep: left %s in namespace %s\n' "$example" "$test_ns"
  elif [ $created_ns -eq 1 ]; then
    printf '\n==> cleanup: deleting namespace %s\n' "$test_ns"
    if ! k delete namespace "$test_ns" --wait=true --timeout="${timeout}s" >/dev/null 2>&1; then
      echo "real-cluster: namespace $test_ns was not deleted within ${timeout}s; delete it by hand" >&2
      [ $rc -ne 0 ] || rc=1
    fi
  else
    printf '\n==> cleanup: deleting the workload from namespace %s\n' "$test_ns"
    k delete -n "$test_ns" -f "$example" --ignore-not-found --wait=true --timeout="${timeout}s" >/dev/null 2>&1 \
      || echo "real-cluster: could not delete $example from $test_ns; delete it by hand" >&2
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Record every state of every claim in the namespace: a claim made from a template is deleted
# once its pod has finished, which may be before a poll would see it.
k get resourceclaims -n "$test_ns" --watch \
  -o jsonpath='{.metadata.name}{" "}{.status.allocation.devices.results[*].driver}{" | "}{.status.allocation.devices.results[*].pool}{" | "}{.status.allocation.devices.results[*].device}{"\n"}' \
  >"$claims_log" 2>/dev/null &
watch_pid=$!
sleep 2

applied=$(k apply -n "$test_ns" -f "$example" -o name)
note "applied: ${applied//$'\n'/ }"
job=$(sed -n 's|^job\.batch/||p' <<<"$applied" | head -1)
[ -n "$job" ] || fail "$example creates no Job"

pod_of_job() {
  local pods
  pods=$(k get pods -n "$test_ns" -l "job-name=$job" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null) || return 1
  echo "${pods%% *}"
}
has_pod() { [ -n "$(pod_of_job)" ]; }
wait_until "$timeout" "a pod of job $job" has_pod
pod=$(pod_of_job)
note "pod $pod"

# Wait until the pod runs (Running, or already Succeeded); report what keeps it Pending.
start=$SECONDS
while :; do
  phase=$(k get pod "$pod" -n "$test_ns" -o jsonpath='{.status.phase}')
  case "$phase" in
    Running | Succeeded) break ;;
    Failed)
      k logs -n "$test_ns" "$pod" --all-containers 2>&1 | sed 's/^/    log: /' || true
      fail "pod $pod failed (its command did not find the devices the claim should have added?)"
      ;;
  esac
  if [ $((SECONDS - start)) -ge "$timeout" ]; then
    k get events -n "$test_ns" --field-selector "involvedObject.name=$pod" \
      -o jsonpath='{range .items[*]}{.reason}{": "}{.message}{"\n"}{end}' 2>/dev/null | tail -n 8 | sed 's/^/    event: /' || true
    fail "pod $pod still $phase after ${timeout}s"
  fi
  sleep 2
done
node=$(k get pod "$pod" -n "$test_ns" -o jsonpath='{.spec.nodeName}')
ok "pod $pod is $phase on node $node"

# Its claim: allocated, to this driver, from the pod's node.
claims=$(k get pod "$pod" -n "$test_ns" -o jsonpath='{.status.resourceClaimStatuses[*].resourceClaimName}')
[ -n "$claims" ] || fail "pod $pod has no generated ResourceClaim in its status"
for claim in $claims; do
  has_allocation() { grep -E "^$claim [^|]+\| [^|]+\| [^ ]" "$claims_log" >/dev/null 2>&1; }
  wait_until 30 "the allocation of claim $claim to show in the watch" has_allocation
  line=$(grep -E "^$claim [^|]+\| [^|]+\| [^ ]" "$claims_log" | tail -1)
  # "<claim> <drivers> | <pools> | <devices>"
  drivers=${line%%|*}
  drivers=${drivers#* }
  rest=${line#*|}
  pools=${rest%%|*}
  devices=${rest#*|}
  for d in $drivers; do
    [ "$d" = "$driver" ] || fail "claim $claim has a result of driver $d, not $driver"
  done
  for p in $pools; do
    [ "$p" = "$node" ] || fail "claim $claim has a device of pool $p, but the pod runs on $node"
  done
  ok "claim $claim allocated on $node:$devices"
done

# The examples print what the claim's CDI spec set and exit; give a Running pod up to a minute
# to get there (a Running pod has been prepared already, so this is for the log only).
start=$SECONDS
while [ "$phase" = Running ] && [ $((SECONDS - start)) -lt 60 ]; do
  sleep 2
  phase=$(k get pod "$pod" -n "$test_ns" -o jsonpath='{.status.phase}')
done
[ "$phase" != Failed ] || fail "pod $pod failed after it started (kubectl -n $test_ns logs $pod)"
k logs -n "$test_ns" "$pod" --all-containers 2>/dev/null | head -n 5 | sed 's/^/    log: /' || true

printf '\nreal-cluster: all checks passed\n'
