#!/usr/bin/env bash
# One node of `scripts/cluster up --runtime containerd`: run inside a private mount namespace
# (scripts/cluster starts it with `unshare --mount --propagation private`), it makes the node's
# host out of the real machine and a fixture host, then runs containerd (with runc and CDI), the
# upstream kubelet over containerd's CRI and the xpu-dra plugin, all in that namespace:
#   - /dev is a tmpfs: the usual devices (null, zero, full, random, urandom, tty, kmsg, pts,
#     shm) and every device node of the fixture (dev/...), made a real character device with
#     the null device's numbers (1:3), so the runtime can stat and hand them out, harmlessly;
#   - /etc, /usr, /opt and /run are overlays: the machine's files first, the fixture's beneath
#     (its driver files: /usr/lib/x86_64-linux-gnu/libcuda.so.<v>, /etc/hccn.conf, /run's
#     sockets, /lib/firmware through /usr/lib), and what is written goes to the node's folder,
#     so the machine is never changed;
#   - containerd, kubelet and plugin state, the CDI specs, logs: under NODE_DIR.
# The plugin's host root is NODE_DIR/host (the fixture copy, links that left it made files), the
# same files the namespace shows at their host paths. Exits when any of the three exits; a
# SIGTERM stops all three (the namespace's mounts go with its last process).
#
# SIGUSR1 restarts containerd, leaving its containers running.
#
#   node.sh NODE_DIR NAME KUBECONFIG RUNTIME_BIN UPSTREAM_BIN PLUGIN_BIN IMAGE_TAR [PLUGIN_FLAG...]
set -euo pipefail
NODE=${1:?usage: node.sh NODE_DIR NAME KUBECONFIG RUNTIME_BIN UPSTREAM_BIN PLUGIN_BIN IMAGE [FLAG...]}
NAME=$2 KCFG=$3 RT=$4 UP=$5 PLUGIN=$6 IMAGE=$7
shift 7
log() { echo "node $NAME: $*"; }
. "$(dirname "$0")/../lib.sh"

# --- the node's host: /dev, then the overlays ------------------------------------------------
mount -t tmpfs -o mode=0755,nosuid tmpfs /dev
for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0 kmsg:1:11; do
  IFS=: read -r n ma mi <<<"$d"
  mknod -m 0666 "/dev/$n" c "$ma" "$mi"
done
chmod 0644 /dev/kmsg
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts /dev/pts
ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin; ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
devices=0
while IFS= read -r -d '' f; do
  rel=${f#"$NODE/host/dev/"}
  mkdir -p "/dev/$(dirname "$rel")"
  mknod -m 0666 "/dev/$rel" c 1 3
  devices=$((devices + 1))
done < <(find "$NODE/host/dev" -type f -print0)
log "/dev: tmpfs with $devices fixture device nodes (c 1:3)"

# The fixture's lib/ and lib64/ belong under usr/ where / links them there (merged /usr).
extra=$NODE/ov-extra
rm -rf "$extra"; mkdir -p "$extra/usr"
for l in lib lib64; do
  if [ -L "/$l" ] && [ -d "$NODE/host/$l" ]; then cp -a "$NODE/host/$l" "$extra/usr/$(readlink "/$l" | sed 's#^/\{0,1\}usr/##')"; fi
done
for d in etc usr opt run; do
  [ -d "/$d" ] && [ ! -L "/$d" ] || continue
  lower=/$d
  [ -d "$NODE/host/$d" ] && lower+=":$NODE/host/$d"
  [ -d "$extra/$d" ] && [ -n "$(ls -A "$extra/$d")" ] && lower+=":$extra/$d"
  [ "$lower" = "/$d" ] && continue
  mkdir -p "$NODE/ov/$d/upper" "$NODE/ov/$d/work"
  mount -t overlay overlay -o "lowerdir=$lower,upperdir=$NODE/ov/$d/upper,workdir=$NODE/ov/$d/work" "/$d"
done
log "overlays: $(mount | awk '$1=="overlay" && $5=="overlay" {print $3}' | grep -E '^/(etc|usr|opt|run)$' | tr '\n' ' ')"

# --- containerd --------------------------------------------------------------------------------
C=$NODE/containerd
mkdir -p "$C/root" "$C/state" "$NODE/runc" "$NODE/cni/conf" "$NODE/cdi" "$NODE/logs"
cat >"$NODE/cni/conf/10-loopback.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "xpu-dra-loopback", "plugins": [{"type": "loopback"}]}
JSON
cat >"$C/config.toml" <<TOML
version = 3
root = "$C/root"
state = "$C/state"
[grpc]
  address = "$C/containerd.sock"
[ttrpc]
  address = "$C/containerd.sock.ttrpc"
[debug]
  level = "info"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "docker.io/xpu-dra/pause:test"
[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = true
  cdi_spec_dirs = ["$NODE/cdi"]
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  # oom_score_adj is never set below containerd's own (a sandboxed machine may refuse lowering it).
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$RT/runc"
      Root = "$NODE/runc"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$RT"]
    conf_dir = "$NODE/cni/conf"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
CTR=("$RT/ctr" --address "$C/containerd.sock" -n k8s.io)
CONTAINERD="" KUBELET="" PLUGIN_PID=""
start_containerd() {
  PATH=$RT:$PATH "$RT/containerd" --config "$C/config.toml" >>"$NODE/logs/containerd.log" 2>&1 &
  CONTAINERD=$!
  echo "$CONTAINERD" >"$NODE/containerd.pid"
  for _ in $(seq 150); do
    "${CTR[@]}" version >/dev/null 2>&1 && return 0
    kill -0 "$CONTAINERD" 2>/dev/null || break
    sleep 0.2
  done
  log "containerd did not start (see $NODE/logs/containerd.log)"
  return 1
}
# The kubelet and the plugin first (nothing restarts a container), then every task, then
# containerd, then any shim left: nothing of the node keeps running.
stop() {
  trap - EXIT TERM INT
  for p in $KUBELET $PLUGIN_PID; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $KUBELET $PLUGIN_PID; do wait "$p" 2>/dev/null || true; done
  local t
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
  [ -n "$CONTAINERD" ] && { kill -TERM "$CONTAINERD" 2>/dev/null || true; wait "$CONTAINERD" 2>/dev/null || true; }
  pkill -KILL -f -- "-address $C/containerd.sock" 2>/dev/null || true
  log "stopped"
}
trap stop EXIT TERM INT
# SIGUSR1: containerd stopped and started again, its containers left running (a runtime upgrade).
RESTART=0
trap 'RESTART=1' USR1
start_containerd || exit 1
"${CTR[@]}" images import "$IMAGE" >"$NODE/logs/import.log" 2>&1 \
  || { log "ctr images import failed (see $NODE/logs/import.log)"; exit 1; }
log "containerd $("$RT/containerd" --version | awk '{print $3}') on $C/containerd.sock, image imported"

# --- kubelet -------------------------------------------------------------------------------------
K=$NODE/kubelet
mkdir -p "$K"
kubelet_config "$K/config.yaml" "unix://$C/containerd.sock" \
  "imageServiceEndpoint: unix://$C/containerd.sock" "podLogsDir: $NODE/pod-logs" \
  "serializeImagePulls: false" "imageGCHighThresholdPercent: 100" "evictionHard: {}"
"$UP/kubelet" --kubeconfig "$KCFG" --config "$K/config.yaml" --root-dir "$K/root" \
  --hostname-override "$NAME" --cert-dir "$K/pki" >"$NODE/logs/kubelet.log" 2>&1 &
KUBELET=$!
echo "$KUBELET" >"$NODE/kubelet.pid"

# --- the plugin ----------------------------------------------------------------------------------
mkdir -p "$NODE/plugin-state"
"$PLUGIN/xpu-dra-plugin" --node-name "$NAME" --kubeconfig "$KCFG" --host-root "$NODE/host" \
  --plugin-registry-dir "$K/root/plugins_registry" --plugin-dir "$K/root/plugins/xpu.dra.dev" \
  --cdi-dir "$NODE/cdi" --state-dir "$NODE/plugin-state" --cdi-hook-path "$PLUGIN/xpu-cdi-hook" \
  --metrics-addr 127.0.0.1:0 "$@" >"$NODE/logs/plugin.log" 2>&1 &
PLUGIN_PID=$!
echo "$PLUGIN_PID" >"$NODE/plugin.pid"
log "kubelet and plugin started"
while :; do
  wait -n || true
  if [ $RESTART -eq 1 ]; then
    RESTART=0
    log "restarting containerd"
    kill -TERM "$CONTAINERD" 2>/dev/null || true
    wait "$CONTAINERD" 2>/dev/null || true
    start_containerd || exit 1
    log "containerd restarted"
    continue
  fi
  for p in $CONTAINERD $KUBELET $PLUGIN_PID; do
    kill -0 "$p" 2>/dev/null || { log "process $p of the node exited; stopping the others"; exit 1; }
  done
done
