#!/usr/bin/env bash
# The container start overhead of a prepared claim's CDI spec: `runc run` of one static program,
# RUNS times in a plain bundle and RUNS times with the spec applied by the CDI library (cdi-apply:
# the code containerd runs for CDI), alternating, so that both see the same machine. What the
# spec adds is its device nodes, its driver-file bind mounts and the createContainer hook
# (xpu-cdi-hook writing the container's loader cache). The program only prints its usage, so the
# difference is the runtime's work, not the program's.
#
# Runs inside a node's mount namespace of `scripts/cluster up --runtime containerd` (nsenter -m),
# where the spec's device nodes and driver files exist at their host paths; needs root.
#
#   start-overhead.sh RUNTIME_BIN PROGRAM SPEC_DIR WORK RUNS CDI_DEVICE...
#
# Prints "plain p50 P ms p90 Q ms | spec p50 S ms p90 T ms | overhead p50 D ms | N device nodes,
# M mounts, H hooks" and writes WORK/start-overhead.json; exit 1 when a container failed.
set -euo pipefail
RT=${1:?usage: start-overhead.sh RUNTIME_BIN PROGRAM SPEC_DIR WORK RUNS CDI_DEVICE...}
PROGRAM=$2 SPEC_DIR=$3 WORK=$4 RUNS=$5
shift 5
[ $# -gt 0 ] || { echo "start-overhead.sh: no CDI device named" >&2; exit 2; }
PY=/usr/bin/python3

# bundle NAME: a rootfs holding only PROGRAM, and runc's default config running `PROGRAM --help`.
bundle() {
  local b=$WORK/$1
  mkdir -p "$b/rootfs"/{dev,proc,sys,tmp,etc}
  cp "$PROGRAM" "$b/rootfs/program"
  (cd "$b" && "$RT/runc" spec)
  $PY - "$b/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"]["terminal"] = False
c["process"]["args"] = ["/program", "--help"]
c["root"]["readonly"] = False
json.dump(c, open(sys.argv[1], "w"), indent=1)
PYEOF
}
mkdir -p "$WORK/runc"
bundle plain
bundle spec
"$RT/cdi-apply" -spec-dir "$SPEC_DIR" -config "$WORK/spec/config.json" "$@" >"$WORK/cdi-apply.log" 2>&1 \
  || { echo "cdi-apply failed: $(tail -c 300 "$WORK/cdi-apply.log")" >&2; exit 1; }

# run NAME I: one container of bundle NAME, its wall time in microseconds on stdout.
run() {
  local t0 t1
  t0=$(date +%s%N)
  "$RT/runc" --root "$WORK/runc" run -b "$WORK/$1" "xpu-start-$1-$2" >/dev/null 2>>"$WORK/runc.log" || return 1
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}
: >"$WORK/plain.us"
: >"$WORK/spec.us"
for i in $(seq "$RUNS"); do
  run plain "$i" >>"$WORK/plain.us" || { echo "runc run of the plain bundle failed: $(tail -c 300 "$WORK/runc.log")" >&2; exit 1; }
  run spec "$i" >>"$WORK/spec.us" || { echo "runc run with the spec failed: $(tail -c 300 "$WORK/runc.log")" >&2; exit 1; }
done
$PY - "$WORK" <<'PYEOF'
import json, sys
w = sys.argv[1]
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] / 1000.0
plain = [int(x) for x in open(w + "/plain.us")]
spec = [int(x) for x in open(w + "/spec.us")]
c = json.load(open(w + "/spec/config.json"))
nodes = len((c.get("linux") or {}).get("devices") or [])
base = len(json.load(open(w + "/plain/config.json")).get("mounts") or [])
mounts = len(c.get("mounts") or []) - base
hooks = sum(len(v) for v in (c.get("hooks") or {}).values())
r = {"runs": len(plain), "plainP50Ms": pct(plain, 0.5), "plainP90Ms": pct(plain, 0.9),
     "specP50Ms": pct(spec, 0.5), "specP90Ms": pct(spec, 0.9),
     "overheadP50Ms": round(pct(spec, 0.5) - pct(plain, 0.5), 2),
     "deviceNodes": nodes, "mounts": mounts, "hooks": hooks}
json.dump(r, open(w + "/start-overhead.json", "w"), indent=1)
print(f"plain p50 {r['plainP50Ms']:.1f} ms p90 {r['plainP90Ms']:.1f} ms | spec p50 {r['specP50Ms']:.1f} ms "
      f"p90 {r['specP90Ms']:.1f} ms | overhead p50 {r['overheadP50Ms']:.1f} ms | {nodes} device nodes, "
      f"{mounts} mounts, {hooks} hook{'' if hooks == 1 else 's'} (n={r['runs']} each)")
PYEOF
