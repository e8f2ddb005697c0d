"""The checks of e2e/upstream/accept-trial.sh over what its runs left in WORK.

    check.py WORK NODES CLASS

WORK/run1/*.json and WORK/gang/*.json: the results `xpuctl accept run` wrote; WORK/claims.watch:
`kubectl get resourceclaims -A --watch --output-watch-events -o json` over both runs;
WORK/nodes.json: the Nodes after the runs. NODES/<node>/host/fake-vendor/: each node's fixture
copy (the fake NVML's and DCMI's power). Prints one line per check: "OK|message" or "FAIL|message".
"""

import glob
import json
import os
import sys

STAGES = ["environment", "operators", "convergence", "performance", "power", "stability", "collectives"]
TOLERANCE = 0.05
STATUS_PERIOD = 1.0  # the plugins' --claim-status-interval in the trial


def out(good, msg):
    print(("OK|" if good else "FAIL|") + msg)


def results(folder):
    """The result documents in folder (a file holds one result or a list of them)."""
    found = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            doc = json.load(open(path))
        except ValueError as e:
            out(False, f"{path}: not JSON ({e})")
            continue
        for r in doc if isinstance(doc, list) else [doc]:
            if isinstance(r, dict) and "stages" in r:
                found.append(r)
    return found


def watched_claims(path):
    """uid -> {name, pods, devices (pool/device), status (the last status.devices)} from a watch."""
    text = open(path).read() if os.path.exists(path) else ""
    dec, i, claims = json.JSONDecoder(), 0, {}
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            event, i = dec.raw_decode(text, i)
        except ValueError:
            break
        obj = event.get("object", event)
        meta = obj.get("metadata", {})
        c = claims.setdefault(meta.get("uid"), {"name": meta.get("namespace", "") + "/" + meta.get("name", ""),
                                                 "pods": set(), "devices": set(), "status": []})
        status = obj.get("status") or {}
        c["pods"].update(r.get("name") for r in status.get("reservedFor") or [] if r.get("resource") == "pods")
        c["pods"].update(o.get("name") for o in meta.get("ownerReferences") or [] if o.get("kind") == "Pod")
        alloc = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        c["devices"].update(f"{r['pool']}/{r['device']}" for r in alloc if r.get("driver") == "xpu.dra.dev")
        if status.get("devices"):
            c["status"] = status["devices"]
    return claims


def fixture_watts(nodes, node, device):
    """The fixture's power of node's device (gpu-N: NVML minorNumber N, npu-N: DCMI phyId N)."""
    fake = os.path.join(nodes, node, "host", "fake-vendor")
    kind, _, index = device.partition("-")
    if kind == "gpu" and os.path.exists(os.path.join(fake, "nvml.json")):
        for d in json.load(open(os.path.join(fake, "nvml.json")))["devices"]:
            if str(d.get("minorNumber")) == index:
                return d["telemetry"]["powerMilliwatts"] / 1000.0
    if kind == "npu" and os.path.exists(os.path.join(fake, "dcmi.json")):
        for d in json.load(open(os.path.join(fake, "dcmi.json")))["chips"]:
            if str(d.get("phyId")) == index:
                return d["telemetry"]["powerDeciwatts"] / 10.0
    return None


def check_energy(claims, nodes, run1):
    """Every claim of xpu devices: energy per device = the fixture's watts x its seconds held.

    The last energy the watch saw: the plugin's write at unprepare comes after the claim
    controller deallocated a finished pod's claim (the server refuses status.devices of a device
    no longer allocated), so the last one seen is usually the last periodic write while held."""
    checked = 0
    by_pod = {}
    for c in claims.values():
        devices = {d for d in c["devices"] if not d.startswith("gangs/")}
        if not devices:
            continue
        data = {f"{e.get('pool')}/{e.get('device')}": (e.get("data") or {}).get("energy") for e in c["status"]}
        lines, good, watts, held = [], True, 0.0, 0.0
        for dev in sorted(devices):
            e = data.get(dev)
            if not e:
                good = False
                lines.append(f"{dev}: no energy in status.devices[].data")
                continue
            node, name = dev.split("/", 1)
            w = fixture_watts(nodes, node, name)
            j, s = e.get("joules"), e.get("secondsHeld")
            if w is None or j is None or not s:
                good = False
                lines.append(f"{dev}: fixture {w} W, joules {j}, seconds {s}")
                continue
            want = w * s
            # NVIDIA's counter where the fixture GPU has one (NVML total energy), else power x time.
            source = "nvml-energy-counter" if name.startswith("gpu-") else "power-x-time"
            good &= abs(j - want) <= TOLERANCE * want and e.get("source") == source
            watts += w
            held = max(held, s)
            lines.append(f"{dev} {j:.1f} J, want {w} W x {s:.1f} s = {want:.1f} J ({e.get('source')}, want {source}"
                         + (", final)" if e.get("final") is True else ", the last write while held)"))
        checked += 1
        for p in c["pods"]:
            by_pod[p] = (watts, held)
        out(good, f"claim {c['name']} (pods {','.join(sorted(c['pods']))}): " + "; ".join(lines))
    out(checked > 0, f"{checked} claims of devices with their energy in status (watched {len(claims)} claims)")
    # The result's energy: the claim's devices' fixture watts x the result's seconds, which are at
    # most the last held seconds the watch saw, and at least those of the write before it.
    for r in run1:
        p = r["stages"].get("power") or {}
        watts, held = by_pod.get(r.get("pod"), (None, None))
        j, s = p.get("joules"), p.get("seconds")
        good = (None not in (watts, j, s) and abs(j - watts * s) <= TOLERANCE * watts * s
                and held - STATUS_PERIOD - 1 <= s <= held + 1)
        out(good, f"{r.get('vendor')}: the result's power {j} J over {s} s; its claim's devices draw {watts} W "
            f"(want {watts * s if None not in (watts, s) else None} J), held {held} s")


def check_run1(run1):
    vendors = sorted({r.get("vendor") for r in run1})
    out(vendors == ["huawei", "nvidia"], f"run1: results of vendors {vendors} (want huawei, nvidia)")
    for r in run1:
        st = {s: (r["stages"].get(s) or {}).get("status") for s in STAGES}
        bad = {s: v for s, v in st.items() if v != "pass"}
        why = "; ".join(f"{s} {v}: {(r['stages'].get(s) or {}).get('reason', '')}"[:160] for s, v in bad.items())
        out(not bad, f"run1 {r.get('vendor')} on {r.get('node')}: every stage passed"
            + (f" (not: {why})" if bad else ""))
        p = r["stages"].get("power") or {}
        out(all(isinstance(p.get(k), (int, float)) for k in ("joules", "averageWatts", "peakWatts", "seconds")),
            f"run1 {r.get('vendor')}: power {p.get('joules')} J, {p.get('averageWatts')} W average, "
            f"{p.get('peakWatts')} W peak over {p.get('seconds')} s, {p.get('joulesPerToken')} J/token")


def check_gang(gang):
    out(len(gang) == 2 and all(r.get("vendor") == "nvidia" for r in gang),
        f"gang: {len(gang)} results of vendors {sorted({r.get('vendor') for r in gang})} (want 2 nvidia)")
    nodes = sorted(r.get("node") or "" for r in gang)
    out(nodes == ["h1", "h2"], f"gang: members on {nodes}")
    for r in gang:
        c = r["stages"].get("collectives") or {}
        where = f"gang member on {r.get('node')}: collectives {c.get('status')} over {c.get('backend')}"
        if "results" in c:
            res = [x for x in c["results"] if x.get("scope") == "gang"]
            sizes = sorted({x.get("worldSize") for x in res})
            ops = sorted({x.get("op") for x in res})
            out(c.get("status") == "pass" and res and sizes == [2] and all(x.get("correct") is True for x in res),
                f"{where}, {len(res)} gang-scope results of {ops}, worldSize {sizes}, all correct")
        else:
            # The summary from the termination message (the kubelets here serve no logs to the API
            # server): the list is a count; the world is nnodes x localWorldSize.
            world = (c.get("nnodes") or 0) * (c.get("localWorldSize") or 0)
            g = c.get("gate") or {}
            out(r.get("summary") is True and c.get("status") == "pass" and world == 2 and g.get("scope") == "gang"
                and (c.get("resultsCount") or 0) > 0,
                f"{where} (summary): {c.get('resultsCount')} measurements, worldSize {c.get('nnodes')} x "
                f"{c.get('localWorldSize')} = {world}, gate scope {g.get('scope')} {g.get('status')}: "
                f"{c.get('reason', '')[:100]}")


def check_labels(run1, nodes_file, cls):
    nodes = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in json.load(open(nodes_file))["items"]}
    key = f"xpu.dra.dev/accepted.{cls}"
    for r in run1:
        n = r.get("node")
        out(key in nodes.get(n, {}), f"node {n} ({r.get('vendor')}) labelled {key}={nodes.get(n, {}).get(key)}")


def main():
    work, nodes, cls = sys.argv[1:4]
    run1, gang = results(os.path.join(work, "run1")), results(os.path.join(work, "gang"))
    check_run1(run1)
    check_gang(gang)
    check_energy(watched_claims(os.path.join(work, "claims.watch")), nodes, run1)
    check_labels(run1, os.path.join(work, "nodes.json"), cls)


if __name__ == "__main__":
    main()
