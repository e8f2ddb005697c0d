# What the upstream trials share (kubelet-trial.sh, runtime-trial.sh, runtime/node.sh and
# e2e/demo/containers.sh): check lines, a trial's end, waiting on a condition, a free port, and
# the kubelet's configuration for a node without a cgroup hierarchy of its own. Sourced, never run.

# PY: the machine's Python the trials' checks run (not a virtual environment's).
PY=${PY:-/usr/bin/python3}

# ok/fail MESSAGE: one check's line; PASS and FAILS count them.
PASS=${PASS:-0} FAILS=${FAILS:-0}
ok() { PASS=$((PASS + 1)); echo "ok: $*"; }
fail() { FAILS=$((FAILS + 1)); echo "FAIL: $*"; }

# trial_finish NAME [CHECK...]: a trial's EXIT trap. Stops the PIDS it started, takes
# WORK/cluster down (WORK/down.log), unmounts what is mounted under WORK, runs CHECK (which may call fail), then prints
# "NAME: N passed, M failed"; WORK is removed when every check passed, kept otherwise (return 1).
trial_finish() {
  local name=$1 p m
  shift
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
  "$ROOT/scripts/cluster" down "$WORK/cluster" >"$WORK/down.log" 2>&1
  # A kubelet run in this mount namespace bind-mounts its root folder onto itself: the mounts
  # under WORK go (deepest first) before WORK does, so none is left on the machine.
  while read -r m; do umount "$m" || fail "umount $m"; done \
    < <(awk -v w="$WORK/" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r)
  [ $# -eq 0 ] || "$@"
  if [ "$FAILS" -eq 0 ] && [ "$PASS" -gt 0 ]; then
    echo "$name: $PASS passed, 0 failed"
    rm -rf "$WORK"
    return 0
  fi
  echo "$name: $PASS passed, $FAILS failed (logs in $WORK)"
  return 1
}

# cluster_left_running: a trial_finish CHECK: nothing of the nodes is left running after
# scripts/cluster down (containerd, its shims, kubelets, plugins, containers under WORK/cluster).
cluster_left_running() {
  local left
  left=$(pgrep -fa -- "$WORK/cluster" | grep -v pgrep || true)
  if [ -n "$left" ]; then fail "processes left after scripts/cluster down: $left"; fi
}

wait_for() {  # wait_for SECONDS COMMAND...: true once the command succeeds
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge $deadline ] && return 1
    sleep 0.5
  done
}

# A port below the ephemeral range (scripts/free-port), found from this file's own place: not every
# script that sources it sets ROOT.
XPU_FREE_PORT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/free-port
free_ports() { /usr/bin/python3 "$XPU_FREE_PORT" "$1"; }  # COUNT distinct ports, one per line

# kubelet_config FILE CRI_ENDPOINT [LINE...]: a KubeletConfiguration with cgroupsPerQOS off and no
# node-allocatable enforcement (no cgroup hierarchy of its own), failCgroupV1 off for hosts still
# on cgroup v1, anonymous read-only access on loopback; each LINE is appended as it is.
kubelet_config() {
  local file=$1 endpoint=$2 ports=()
  shift 2
  mapfile -t ports < <(free_ports 2)
  {
    cat <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupsPerQOS: false
enforceNodeAllocatable: []
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: $endpoint
address: 127.0.0.1
port: ${ports[0]}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${ports[1]}
localStorageCapacityIsolation: false
YAML
    printf '%s\n' "$@"
  } >"$file"
}
