#!/usr/bin/env bash
# The whole driver path on a real NVIDIA GPU, as one short prepared script for the device machine
# (no network there; under 5 minutes):
#   1. xpuctl discover and xpuctl doctor against the real host (host root /);
#   2. kube-sim and the plugin with host root / and the real NVML;
#   3. a claim for GPU 0, prepared over the plugin's real socket (xpu-kubelet-call);
#   4. the spec applied by the CDI library (cdi-apply, the Go library containerd uses) to a runc
#      bundle whose root holds only glibc and a CUDA check built here with this machine's nvcc and
#      linked statically against the CUDA runtime (scripts/device/cuda_check.cu): libcuda.so.1,
#      nvidia-smi and the rest can only come from our spec;
#   5. inside: cuInit, the visible devices and their UUID, a kernel's result, nvidia-smi -L;
#   6. the plugin's telemetry (power, utilisation, memory, temperature) idle and under a
#      matrix-multiply load;
#   7. the acceptance kit's stages (deploy/acceptance, `python3 -m xpu_acceptance`) on the claimed
#      GPU, where the machine has a Python with a CUDA torch (none is installed by this script: no
#      network), its result reported with `xpuctl accept report`;
#   8. unprepare: the spec is gone, and the claim's status holds its energy (status.devices).
# Writes $OUT/gpu-e2e.json (one summary: each step's result) and $OUT/gpu-e2e.log, and copies of
# what it read (discover.json, doctor.json, the CDI spec, the container's output). Exits 0 with
# {"gpu": false, ...} on a machine without an NVIDIA GPU; never needs the network.
#
# Binaries come from a bundle made on the build machine (they and every shared library they
# load, run through the bundled loader, so the device machine's libraries do not matter):
#   scripts/device/gpu-e2e.sh --make-bundle      # build/gpu-bundle/ and build/gpu-bundle.tar.xz
#                                                # (carry the .tar.xz: the device tool's limit)
#   OUT=/some/dir scripts/device/gpu-e2e.sh      # on the GPU machine
# XPU_GPU_E2E_FIXTURE=hgx-h200 rehearses steps 1-3, 6 and 8 on a fixture host with its fake NVML
# (no container: the fixture's device nodes are plain files), to check the script off the device.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUNDLE=${XPU_GPU_BUNDLE:-$ROOT/build/gpu-bundle}
OUT=${OUT:-./out}
START=$SECONDS
DEADLINE=$((SECONDS + 280))

# --- the bundle (on the build machine) ------------------------------------------------------------
make_bundle() {
  local build=$ROOT/build rt b lib
  rt=$("$ROOT/scripts/build-runtime" | tail -1) || return 1
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE/bin" "$BUNDLE/lib" "$BUNDLE/src"
  for b in xpuctl xpu-dra-plugin kube-sim xpu-kubelet-call xpu-cdi-hook; do
    cp "$build/bin/$b" "$BUNDLE/bin/" || { echo "gpu-e2e: $build/bin/$b is missing" >&2; return 1; }
  done
  cp "$rt/runc" "$rt/cdi-apply" "$BUNDLE/bin/"
  strip "$BUNDLE"/bin/{xpuctl,xpu-dra-plugin,kube-sim,xpu-kubelet-call} 2>/dev/null || true
  # Every shared library of the dynamic ones, glibc and its loader included.
  for lib in $(for b in xpuctl xpu-dra-plugin kube-sim xpu-kubelet-call; do ldd "$BUNDLE/bin/$b"; done |
    sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*ld-linux[^ ]*\) .*/\1/p' | sort -u); do
    cp -L "$lib" "$BUNDLE/lib/"
  done
  cp "$ROOT/scripts/device/cuda_check.cu" "$BUNDLE/src/"
  # The acceptance kit's workload and its default policy (Python sources: a few hundred KiB).
  mkdir -p "$BUNDLE/acceptance"
  cp -r "$ROOT/deploy/acceptance/xpu_acceptance" "$ROOT/deploy/acceptance/policy.default.json" \
    "$BUNDLE/acceptance/"
  find "$BUNDLE/acceptance" -name __pycache__ -prune -exec rm -rf {} +
  strip --strip-unneeded "$BUNDLE"/lib/*.so* 2>/dev/null || true
  # Carried compressed (the device tool carries at most 64 MiB): about a third of the folder.
  tar -C "$(dirname "$BUNDLE")" -cJf "$BUNDLE.tar.xz" "$(basename "$BUNDLE")"
  echo "gpu-e2e: bundle in $BUNDLE ($(du -sh "$BUNDLE" | cut -f1)), carry $BUNDLE.tar.xz ($(du -sh "$BUNDLE.tar.xz" | cut -f1))"
}
if [ "${1:-}" = --make-bundle ]; then make_bundle; exit; fi
case "${1:-}" in -h | --help) sed -n '2,28s/^# \{0,1\}//p' "$0"; exit 0 ;; esac

mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
LOG=$OUT/gpu-e2e.log
SUMMARY=$OUT/gpu-e2e.json
: >"$LOG"
WORK=$(mktemp -d /tmp/xpu-gpu-e2e.XXXXXX)
PIDS=()
STEPS=""
log() { echo "[$((SECONDS - START))s] $*" | tee -a "$LOG" >&2; }
json_str() { printf '"%s"' "$(printf '%s' "$1" | tr -d '\000-\037' | sed 's/\\/\\\\/g; s/"/\\"/g' | cut -c1-600)"; }
# record NAME ok|fail|skip DETAIL
record() {
  STEPS+="${STEPS:+,}{\"step\": $(json_str "$1"), \"result\": $(json_str "$2"), \"detail\": $(json_str "$3")}"
  log "$2 $1: $3"
}
finish() {
  local gpu=$1 reason=$2
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  printf '{"gpu": %s, "reason": %s, "host": %s, "seconds": %d, "steps": [%s]}\n' "$gpu" \
    "$(json_str "$reason")" "$(json_str "$(uname -srm)")" "$((SECONDS - START))" "$STEPS" >"$SUMMARY"
  log "summary in $SUMMARY"
  rm -rf "$WORK"
  exit 0
}
left() { local l=$((DEADLINE - SECONDS)); [ $l -lt 5 ] && l=5; echo "$l"; }

# --- 0. is there a GPU? ------------------------------------------------------------------------------
HOST=/
REHEARSAL=${XPU_GPU_E2E_FIXTURE:-}
if [ -n "$REHEARSAL" ]; then
  HOST=$ROOT/e2e/fixtures/hosts/$REHEARSAL
  [ -d "$HOST" ] || { record detect fail "no fixture host $REHEARSAL"; finish false "no fixture"; }
  log "a rehearsal on the fixture host $REHEARSAL (its fake NVML), not a GPU"
elif [ ! -e /dev/nvidiactl ] && ! nvidia-smi -L >/dev/null 2>&1; then
  log "no NVIDIA GPU here: /dev/nvidiactl is missing and nvidia-smi lists none"
  record detect skip "no NVIDIA GPU on this machine"
  finish false "no NVIDIA GPU on this machine: /dev/nvidiactl is missing and nvidia-smi lists none"
fi
[ -n "$REHEARSAL" ] || log "GPU machine: $(nvidia-smi -L 2>&1 | head -2 | tr '\n' ' ')"
if [ ! -x "$BUNDLE/bin/xpu-dra-plugin" ] && [ -f "$BUNDLE.tar.xz" ]; then
  tar -C "$WORK" -xJf "$BUNDLE.tar.xz" && BUNDLE=$WORK/$(basename "$BUNDLE")
  log "the bundle unpacked from $BUNDLE.tar.xz"
fi
[ -x "$BUNDLE/bin/xpu-dra-plugin" ] || {
  record bundle fail "no bundle at $BUNDLE (scripts/device/gpu-e2e.sh --make-bundle on the build machine, then carry build/gpu-bundle)"
  finish true "no bundle"
}
LOADER=$(ls "$BUNDLE"/lib/ld-linux*.so* 2>/dev/null | head -1)
run_b() { local b=$1; shift; "$LOADER" --library-path "$BUNDLE/lib" "$BUNDLE/bin/$b" "$@"; }

# --- 1. discover and doctor -------------------------------------------------------------------------
if timeout "$(left)" "$LOADER" --library-path "$BUNDLE/lib" "$BUNDLE/bin/xpuctl" discover \
  --host-root "$HOST" -o json >"$OUT/discover.json" 2>>"$LOG"; then
  record discover ok "$(grep -o '"model": *"[^"]*"' "$OUT/discover.json" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
else
  record discover fail "xpuctl discover failed (see gpu-e2e.log)"
fi
timeout "$(left)" "$LOADER" --library-path "$BUNDLE/lib" "$BUNDLE/bin/xpuctl" doctor --host-root "$HOST" \
  --cdi-hook-path "$BUNDLE/bin/xpu-cdi-hook" -o json >"$OUT/doctor.json" 2>>"$LOG"
record doctor "$([ -s "$OUT/doctor.json" ] && echo ok || echo fail)" \
  "$(tr -d '\n' <"$OUT/doctor.json" | grep -o '"name": *"driver-files"[^}]*' | head -1)"

# --- 2. kube-sim and the plugin on the real host ------------------------------------------------
mkdir -p "$WORK"/{registry,plugins,cdi,state,runc}
run_b kube-sim --listen 127.0.0.1:0 --kubeconfig-out "$WORK/kubeconfig" >"$WORK/kube-sim.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/kubeconfig" ] && break; sleep 0.2; done
SERVER=$(sed -n 's/^ *server: *//p' "$WORK/kubeconfig" | head -1)
TOKEN=$(sed -n 's/^ *token: *//p' "$WORK/kubeconfig" | head -1)
api() {  # api METHOD PATH [BODY]
  curl -sk -X "$1" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    ${3:+--data-binary "$3"} "$SERVER$2"
}
for ns in default xpu-dra; do api POST /api/v1/namespaces "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" >/dev/null; done
api POST /api/v1/nodes '{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu-node"}}' >/dev/null
METRICS_PORT=$((20000 + RANDOM % 20000))
run_b xpu-dra-plugin --node-name gpu-node --kubeconfig "$WORK/kubeconfig" --host-root "$HOST" \
  --plugin-registry-dir "$WORK/registry" --plugin-dir "$WORK/plugins" --cdi-dir "$WORK/cdi" \
  --state-dir "$WORK/state" --cdi-hook-path "$BUNDLE/bin/xpu-cdi-hook" \
  --metrics-addr "127.0.0.1:$METRICS_PORT" --telemetry-interval 1s --node-checklist=false \
  >"$WORK/plugin.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$WORK/registry/xpu.dra.dev-reg.sock" ] && break; sleep 0.2; done
if run_b xpu-kubelet-call register "$WORK/registry/xpu.dra.dev-reg.sock" >>"$LOG" 2>&1; then
  record plugin ok "registered; $(grep -o 'discovered [0-9]* devices[^"]*' "$WORK/plugin.log" | head -1)"
else
  record plugin fail "no registration: $(tail -3 "$WORK/plugin.log" | tr '\n' ' ')"
  cp "$WORK/plugin.log" "$OUT/"; finish true "the plugin did not start"
fi

# --- 3. a claim for gpu-0, prepared --------------------------------------------------------------
api POST /apis/resource.k8s.io/v1/namespaces/default/resourceclaims '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"gpu"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"nvidia.xpu.dra.dev","count":1}}]}}}' >"$WORK/claim.json"
field() { tr -d '\n' <"$1" | grep -o "\"$2\": *\"[^\"]*\"" | head -1 | sed 's/.*"\([^"]*\)"$/\1/'; }
UID_=$(field "$WORK/claim.json" uid)
RV=$(field "$WORK/claim.json" resourceVersion)
api PUT /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu/status "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":\"gpu\",\"namespace\":\"default\",\"uid\":\"$UID_\",\"resourceVersion\":\"$RV\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"nvidia.xpu.dra.dev\",\"count\":1}}]}},\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"xpu.dra.dev\",\"pool\":\"gpu-node\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"gpu-node\"]}]}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"11111111-2222-4333-8444-555555555555\"}]}}" >>"$LOG"
sleep 2  # the first inventory (the plugin answers "not discovered yet" before it)
PREP=$(run_b xpu-kubelet-call prepare "$WORK/plugins/dra.sock" "default/gpu/$UID_" 2>>"$LOG")
CDI_ID=$(printf '%s' "$PREP" | grep -o '"k8s.xpu.dra.dev/device=[^"]*"' | head -1 | tr -d '"')
cp "$WORK"/cdi/*.json "$OUT/cdi-spec.json" 2>/dev/null
if [ -n "$CDI_ID" ]; then
  record prepare ok "$CDI_ID; spec mounts $(grep -o '"containerPath"' "$OUT/cdi-spec.json" | wc -l) paths"
else
  record prepare fail "$PREP"
fi

# --- 4./5. the spec applied to a runc container that has only glibc and the CUDA check ------------
B=$WORK/bundle
mkdir -p "$B/rootfs"/{dev,proc,sys,tmp,etc}
if [ -z "$REHEARSAL" ] && command -v nvcc >/dev/null && [ -n "$CDI_ID" ]; then
  if timeout "$(left)" nvcc -O2 -cudart static -o "$B/rootfs/cuda-check" "$BUNDLE/src/cuda_check.cu" >>"$LOG" 2>&1; then
    for lib in $(ldd "$B/rootfs/cuda-check" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
      mkdir -p "$B/rootfs$(dirname "$lib")"; cp -L "$lib" "$B/rootfs$lib"
    done
    (cd "$B" && "$BUNDLE/bin/runc" spec)
    sed -i 's/"terminal": true/"terminal": false/; s/"readonly": true/"readonly": false/' "$B/config.json"
    sed -i 's|"sh"|"/cuda-check"|' "$B/config.json"
    if "$BUNDLE/bin/cdi-apply" -spec-dir "$WORK/cdi" -config "$B/config.json" "$CDI_ID" >>"$LOG" 2>&1; then
      record cdi-apply ok "$(grep -c '"path": "/dev/nvidia' "$B/config.json") device nodes, $(grep -c 'xpu-cdi-hook' "$B/config.json") hook"
      timeout "$(left)" "$BUNDLE/bin/runc" --root "$WORK/runc" run -b "$B" xpu-gpu-check >"$OUT/container.json" 2>>"$LOG"
      rc=$?
      record container "$([ $rc -eq 0 ] && echo ok || echo fail)" "exit $rc: $(head -c 500 "$OUT/container.json")"
    else
      record cdi-apply fail "see gpu-e2e.log"
    fi
  else
    record container fail "nvcc could not build the CUDA check (see gpu-e2e.log)"
  fi
else
  record container skip "$([ -n "$REHEARSAL" ] && echo 'a rehearsal: no device to run on' || { command -v nvcc >/dev/null && echo 'nothing prepared' || echo 'no nvcc on this machine'; })"
fi

# --- 6. telemetry idle, then under load ------------------------------------------------------------
sample() { curl -s "http://127.0.0.1:$METRICS_PORT/metrics" | grep -E '^xpu_dra_device_(power|utilization|memory_used|temperature)[^ ]*\{[^}]*gpu-0' | tr '\n' ';'; }
sleep 2
IDLE=$(sample)
record telemetry-idle "$([ -n "$IDLE" ] && echo ok || echo fail)" "$IDLE"
if [ -x "$B/rootfs/cuda-check" ] && [ $((DEADLINE - SECONDS)) -gt 40 ]; then
  sed -i 's|"/cuda-check"|"/cuda-check", "--load", "20"|' "$B/config.json"
  timeout 40 "$BUNDLE/bin/runc" --root "$WORK/runc" run -b "$B" xpu-gpu-load >"$OUT/load.json" 2>>"$LOG" &
  LOADPID=$!
  sleep 12
  LOADED=$(sample)
  wait "$LOADPID"
  record telemetry-load "$([ -n "$LOADED" ] && echo ok || echo fail)" "$LOADED $(cat "$OUT/load.json")"
else
  record telemetry-load skip "no CUDA check to run, or no time left"
fi

# --- 7. the acceptance kit on the claimed GPU ---------------------------------------------------------
# On the host (the runc root above has no Python), with the claim's GPU made visible as the spec
# makes it visible in a container; short stage sizes, so it fits the device budget.
TORCH_PY=""
for py in python3 /usr/bin/python3 /opt/conda/bin/python3; do
  if timeout 60 "$py" -c 'import sys, torch; sys.exit(0 if torch.accelerator.is_available() else 1)' >/dev/null 2>&1; then
    TORCH_PY=$py; break
  fi
done
if [ -z "$REHEARSAL" ] && [ -n "$TORCH_PY" ] && [ -n "$CDI_ID" ] && [ $((DEADLINE - SECONDS)) -gt 90 ]; then
  printf '%s\n' '{"convergence": {"steps": 30}, "performance": {"steps": 10}, "stability": {"durationSeconds": 20},' \
    '"collectives": {"minBytes": 1048576, "maxBytes": 67108864, "gateBytes": 67108864}}' >"$WORK/policy.json"
  VISIBLE=$(grep -o '"NVIDIA_VISIBLE_DEVICES=[^"]*"' "$OUT/cdi-spec.json" | head -1 | sed 's/.*=//; s/"//')
  CUDA_VISIBLE_DEVICES=${VISIBLE:-0} PYTHONPATH=$BUNDLE/acceptance XPU_ACCEPT_VENDOR=nvidia \
    XPU_ACCEPT_NODE=gpu-node XPU_ACCEPT_IMAGE="host $($TORCH_PY -c 'import torch; print("torch", torch.__version__)' 2>/dev/null)" \
    timeout $((DEADLINE - SECONDS - 30)) "$TORCH_PY" -m xpu_acceptance --policy "$WORK/policy.json" \
    --out "$OUT/accept-result.json" --termination-log "$OUT/accept-termination.txt" >"$WORK/accept.out" 2>>"$LOG"
  rc=$?
  record accept "$([ $rc -eq 0 ] && echo ok || echo fail)" "exit $rc: $(head -c 500 "$OUT/accept-termination.txt" 2>/dev/null)"
  [ -s "$OUT/accept-result.json" ] && run_b xpuctl accept report "$OUT/accept-result.json" -o html \
    --out "$OUT/accept-report.html" >>"$LOG" 2>&1
else
  record accept skip "$([ -n "$REHEARSAL" ] && echo 'a rehearsal: no device' || { [ -n "$TORCH_PY" ] && echo 'nothing prepared, or no time left' || echo 'no Python with a CUDA torch on this machine (the kit needs the framework; none is installed here: no network)'; })"
fi

# --- 8. unprepare ------------------------------------------------------------------------------------
if [ -n "$UID_" ]; then
  run_b xpu-kubelet-call unprepare "$WORK/plugins/dra.sock" "default/gpu/$UID_" >>"$LOG" 2>&1
  if ls "$WORK"/cdi/*.json >/dev/null 2>&1; then record unprepare fail "a spec is left: $(ls "$WORK/cdi")"
  else record unprepare ok "the spec is gone"; fi
  # The energy the plugin accounted for the claim, written into its status at unprepare.
  for _ in $(seq 20); do
    api GET /apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu >"$OUT/claim-status.json"
    grep -q '"joules"' "$OUT/claim-status.json" && break
    sleep 0.5
  done
  record energy "$(grep -q '"joules"' "$OUT/claim-status.json" && echo ok || echo fail)" \
    "$(tr -d ' \n' <"$OUT/claim-status.json" | grep -o '"energy":{[^}]*}' | head -1)"
fi
cp "$WORK/plugin.log" "$OUT/plugin.log" 2>/dev/null
[ -n "$REHEARSAL" ] && finish false "a rehearsal on the fixture host $REHEARSAL, no GPU"
finish true "ran on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
