# Pods of xpu-container-check on the nodes of `scripts/cluster up --runtime containerd`, shared by
# the upstream-runtime tier (e2e/upstream/runtime-trial.sh) and the demo (e2e/demo/containers.sh).
# The caller defines K (kubectl against the cluster), NODES (the cluster's nodes/ folder) and
# WORK (a scratch folder).

# pod NAME NODE CLASS COUNT [ARG...]: a claim NAME for COUNT devices of CLASS and a pod NAME on
# NODE running xpu-container-check with ARGs. The fake vendor libraries find their answers in
# the fixture's fake-vendor/ (a hostPath volume, where the fixture has one) and list only the
# devices whose node the container has (XPU_FAKE_*_DEV_DIR).
pod() {
  local name=$1 node=$2 class=$3 count=$4 selector=""
  shift 4
  local args="" mount="" volume=""
  [ $# -gt 0 ] && args="    args: [$(printf '"%s",' "$@" | sed 's/,$//')]"
  [ -n "${SELECTOR:-}" ] && selector="        selectors: [{cel: {expression: '$SELECTOR'}}]"
  if [ -d "$NODES/$node/host/fake-vendor" ]; then
    mount="    volumeMounts: [{name: fake-vendor, mountPath: /fake-vendor, readOnly: true}]"
    volume="  volumes: [{name: fake-vendor, hostPath: {path: $NODES/$node/host/fake-vendor, type: Directory}}]"
  fi
  K apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: $name, namespace: default}
spec:
  devices:
    requests:
    - name: devs
      exactly:
        deviceClassName: $class
        count: $count
$selector
---
apiVersion: v1
kind: Pod
metadata: {name: $name, namespace: default}
spec:
  restartPolicy: Never
  hostNetwork: true
  nodeSelector: {kubernetes.io/hostname: "$node"}
  terminationGracePeriodSeconds: 2
  containers:
  - name: check
    image: docker.io/xpu-dra/container-check:test
    imagePullPolicy: Never
$args
    env:
    - {name: XPU_FAKE_NVML_JSON, value: /fake-vendor/nvml.json}
    - {name: XPU_FAKE_NVML_DEV_DIR, value: /dev}
    - {name: XPU_FAKE_DCMI_JSON, value: /fake-vendor/dcmi.json}
    - {name: XPU_FAKE_DCMI_DEV_DIR, value: /dev}
    - {name: XPU_FAKE_HYDMI_JSON, value: /fake-vendor/hydmi.json}
    - {name: XPU_FAKE_HYDMI_DEV_DIR, value: /dev}
$mount
    resources:
      claims: [{name: devs}]
  resourceClaims:
  - {name: devs, resourceClaimName: $name}
$volume
EOF
  note_allocation "$name"
}
phase() { K get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null; }
# The claim's allocation, noted as soon as the scheduler makes it: once its pod is done the
# claim controller deallocates it.
note_allocation() {
  local deadline=$(($(date +%s) + 60)) a=""
  while [ -z "$a" ] && [ "$(date +%s)" -lt $deadline ]; do
    a=$(K get resourceclaim "$1" -o jsonpath='{range .status.allocation.devices.results[*]}{.device}{" "}{end}' 2>/dev/null)
    [ -n "$a" ] || sleep 0.2
  done
  echo "$a" >"$WORK/$1.allocated"
}
is_phase() { [ "$(phase "$1")" = "$2" ]; }
# The container's reports (its log file as containerd writes it, CRI format: "<time> <stream> F
# <line>"), one JSON per line; the last one to stdout.
log_of() { cat "$NODES/$2"/pod-logs/default_"$1"_*/check/*.log 2>/dev/null | sed -n 's/^[^ ]* stdout F //p'; }
claim_uid() { K get resourceclaim "$1" -o jsonpath='{.metadata.uid}'; }
allocated() { cat "$WORK/$1.allocated" 2>/dev/null; }
