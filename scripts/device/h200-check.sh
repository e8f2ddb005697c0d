#!/usr/bin/env bash
# Records the facts of a real NVIDIA GPU machine (written for the H200 device machine) that the
# discovery issue needs for its fixtures and fake NVML library: builds tools/nvml-probe with the
# plain C++ compiler (no cmake, ninja or third-party headers needed), runs it, and saves nvidia-smi
# and lspci views next to its JSON.
#
# Usage (from anywhere; the repository is found from this script's path):
#   OUT=/some/dir scripts/device/h200-check.sh      # OUT defaults to ./out
# Environment: OUT (output folder), CXX (compiler to use), NVML_PROBE_BIN (a prebuilt nvml-probe,
# skips the build). Every step is time-limited and tolerant of failure; the result of each is one
# line in $OUT/summary.txt. The script finishes within about two minutes and always exits 0.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-./out}"
mkdir -p "$OUT" || { echo "h200-check: cannot create $OUT" >&2; exit 0; }
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/summary.txt"
DEADLINE=$((SECONDS + 110))  # whole-run budget in seconds, kept under two minutes
: >"$SUMMARY"

note() { echo "$*" >>"$SUMMARY"; }
have() { command -v "$1" >/dev/null 2>&1; }

# limited SECONDS CMD...: runs CMD under `timeout` when that exists.
limited() {
  local s=$1
  shift
  if have timeout; then timeout "$s" "$@"; else "$@"; fi
}

# step NAME FILE CMD...: appends "$ CMD" and CMD's stdout+stderr to $OUT/FILE; records the result.
step() {
  local name=$1 file=$2 rc=0 left
  shift 2
  left=$((DEADLINE - SECONDS))
  if ((left < 5)); then note "SKIP  $name (time budget spent)"; return 0; fi
  if ! have "$1"; then
    echo "$1: not found" >>"$OUT/$file"
    note "SKIP  $name ($1 not found)"
    return 0
  fi
  echo "\$ $*" >>"$OUT/$file"
  limited $((left < 30 ? left : 30)) "$@" >>"$OUT/$file" 2>&1 || rc=$?
  echo >>"$OUT/$file"
  if ((rc == 0)); then note "ok    $name -> $file"; else note "FAIL  $name -> $file (exit $rc)"; fi
  return 0
}

note "h200-check $(date -u +%Y-%m-%dT%H:%M:%SZ 2>/dev/null) repo=$ROOT out=$OUT"
step "uname -a" uname.txt uname -a
step "os-release" uname.txt cat /etc/os-release

# Build the probe with whatever C++ compiler is present.
CXX_BIN=""
for c in "${CXX:-}" g++ c++ clang++; do
  if [ -n "$c" ] && have "$c"; then CXX_BIN=$c; break; fi
done
BIN="${NVML_PROBE_BIN:-}"
if [ -n "$BIN" ]; then
  note "info  using prebuilt NVML_PROBE_BIN=$BIN"
elif [ -z "$CXX_BIN" ]; then
  note "FAIL  build nvml-probe (no C++ compiler: tried \$CXX, g++, c++, clang++)"
else
  step "$CXX_BIN --version" gxx-version.txt "$CXX_BIN" --version
  BUILD="$(mktemp -d "${TMPDIR:-/tmp}/nvml-probe.XXXXXX")"
  BIN="$BUILD/nvml-probe"
  for std in c++20 c++2a c++17; do  # the probe needs only C++17; older compilers lack c++20
    step "build nvml-probe (-std=$std)" build.txt "$CXX_BIN" -std=$std -O1 -Wall -Wextra -Wshadow \
      "$ROOT/tools/nvml-probe/nvml_probe.cc" -o "$BIN" -ldl
    [ -x "$BIN" ] && break
  done
fi

left=$((DEADLINE - SECONDS))
if [ -n "$BIN" ] && [ -x "$BIN" ] && ((left >= 5)); then
  rc=0
  limited $((left < 60 ? left : 60)) "$BIN" >"$OUT/nvml-probe.json" 2>"$OUT/nvml-probe.stderr" || rc=$?
  case $rc in
    0) note "ok    nvml-probe -> nvml-probe.json" ;;
    3) note "FAIL  nvml-probe -> nvml-probe.json (exit 3: libnvidia-ml.so.1 not loadable)" ;;
    4) note "FAIL  nvml-probe -> nvml-probe.json (exit 4: nvmlInit_v2 failed)" ;;
    124) note "FAIL  nvml-probe -> nvml-probe.json (timed out)" ;;
    *) note "FAIL  nvml-probe -> nvml-probe.json (exit $rc, see nvml-probe.stderr)" ;;
  esac
else
  note "FAIL  nvml-probe not run (no binary, or time budget spent)"
fi

step "nvidia-smi -L" nvidia-smi.txt nvidia-smi -L
step "nvidia-smi -q" nvidia-smi.txt nvidia-smi -q
step "nvidia-smi topo -m" nvidia-smi-topo.txt nvidia-smi topo -m
step "nvidia-smi nvlink -s" nvidia-smi-nvlink.txt nvidia-smi nvlink -s
step "nvidia-smi nvlink -c" nvidia-smi-nvlink.txt nvidia-smi nvlink -c
step "lspci -tv" lspci-tree.txt lspci -tv
step "lspci -nn -vvv -d 10de:" lspci-nvidia.txt lspci -nn -vvv -d 10de:

note "done  in ${SECONDS}s"
cat "$SUMMARY"
if [ -s "$OUT/nvml-probe.json" ]; then
  echo "--- nvml-probe.json (first 6000 bytes)"
  head -c 6000 "$OUT/nvml-probe.json"
  echo
fi
exit 0
