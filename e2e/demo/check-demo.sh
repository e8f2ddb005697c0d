#!/usr/bin/env bash
# The demo as a test (ctest upstream-demo): runs build/bin/xpu-demo on the local upstream control
# plane and checks what it wrote and that it left nothing running.
#   e2e/demo/check-demo.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check-demo.sh BUILD_DIR}
out=$build/demo-check
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
mkdir -p "$out"
# As scripts/demo: the placement lab's page, shown as the report's last section.
"$build/bin/xpuctl" replay --synthetic 300 --fleet "$src/e2e/fixtures/fleets/demo.yaml" \
  --policy stock-unordered --policy stock-xpu --policy solver --report "$out/replay.html" \
  >"$out/replay.txt" 2>&1 || { cat "$out/replay.txt"; exit 1; }
"$build/bin/xpu-demo" --out "$out" --lab-report "$out/replay.html" >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
cat "$out.log"
lines=$(wc -l <"$out.log")
[ "$lines" -le 150 ] || { echo "FAIL: the demo printed $lines lines (at most 150)"; exit 1; }
dir=$(sed -n 's/^control plane: .* in \(\/[^ ]*\)$/\1/p' "$out.log")
[ -n "$dir" ] || { echo "FAIL: the demo did not name its cluster folder"; exit 1; }
if pgrep -f -- "$dir" >/dev/null; then
  echo "FAIL: processes of $dir still running:"; pgrep -af -- "$dir"; exit 1
fi
/usr/bin/python3 - "$out" <<'PYEOF'
import json, sys
out = sys.argv[1]
d = json.load(open(f"{out}/demo.json"))
P = d["placements"]
assert len(P) >= 10, f"only {len(P)} placements"
assert 0 <= d["agreement"] <= 1
assert d["agreement"] == sum(p["asGoodAsSolver"] for p in P) / len(P)
models = {p["model"] for p in P}
assert {"atlas800-9000", "hgx-h200"} <= models or len(models) >= 4, models
broken = [p["pod"] for p in P if not p["rulesHold"]]
assert not broken, f"vendor rules broken in {broken}"
for p in P:
    assert p["devices"] and len(p["devices"]) == len(set(p["devices"])), p
    assert len(p["solver"]) == len(p["devices"]), p
steps = {p["step"] for p in P}
assert {"training", "nvlink", "burst", "large-memory", "refill", "gang", "fault"} <= steps, steps
G = {g["name"]: g for g in d["gangs"]}
assert G["llm"]["phase"] == "Placed" and len(G["llm"]["members"]) == 2, G["llm"]
assert G["wide"]["phase"] == "Pending" and "no domain up to tier leaf" in G["wide"]["message"], G["wide"]
members = [p for p in P if p["step"] == "gang"]
assert sorted(p["node"] for p in members) == sorted(G["llm"]["members"]), (members, G["llm"])
assert all(len(p["devices"]) == 8 for p in members), members
large = [p for p in P if p["step"] == "large-memory"][0]
assert "firstAvailable chose" in large["note"] and not large["note"].endswith("/nvidia"), large
sick = {n["node"]: set(n["unhealthy"]) for n in d["nodes"]}
fault = [p for p in P if p["step"] == "fault"][0]
assert sick[fault["node"]], "no device was tainted"
assert not (set(fault["devices"]) & sick[fault["node"]]), "the claim after the fault got the sick device"
html = open(f"{out}/report.html").read()
assert html.count("<svg") == len(d["nodes"]) + len(d["gangs"]), "one picture per node and per gang"
assert 'src="http' not in html and "<script" not in html
assert "<h2>Placement lab</h2>" in html and "srcdoc=" in html, "the placement lab section"
print(f"demo: {len(P)} placements on {len(models)} models, agreement {d['agreement']:.2f}, rules kept in all; gang llm on {G['llm']['members']}")
PYEOF
