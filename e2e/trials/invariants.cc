#include "e2e/trials/invariants.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "api/accelerator_gang.h"  // kGangPoolName

namespace xpu::e2e::trials {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

StatusOr<json> ReadJson(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return DataLossError("read " + path.string() + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  json doc = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return DataLossError("read " + path.string() + ": not JSON");
  return doc;
}

// The parts in one string, without the temporaries of a chain of operator+.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (const std::string_view p : parts) out.append(p);
  return out;
}

// "k8s.<driver>-device_": the CDI spec files of a driver's claims (the kind with '/' as '-').
std::string SpecPrefix(const std::string& driver) { return "k8s." + driver + "-device_"; }

std::string Quoted(const std::vector<std::string>& names) {
  std::string out = "[";
  for (const std::string& n : names) out += (out.size() > 1 ? "," : "") + n;
  return out + "]";
}

std::vector<std::string> Names(const json& devices, const char* key) {
  std::vector<std::string> out;
  for (const json& d : devices) out.push_back(d.value(key, ""));
  return out;
}

// What the checkpoint says of one claim against its allocation; `what` names the claim.
void CheckEntry(const TrialClaim& claim, const json& entry, const PluginDisk& disk,
                const std::string& node, const std::string& driver, const std::string& what,
                std::vector<std::string>* out) {
  if (entry.value("state", "") != "Prepared") {
    out->push_back(what + ": state \"" + entry.value("state", "") + "\" in the checkpoint");
  }
  const json devices = entry.value("devices", json::array());
  const bool ours = claim.pool == node;
  const std::vector<std::string> want = ours ? claim.devices : std::vector<std::string>{};
  const std::vector<std::string> have = Names(devices, "device");
  if (have != want) {
    out->push_back(what + ": checkpoint devices " + Quoted(have) + ", allocated " + Quoted(want));
    return;
  }
  for (const json& d : devices) {
    const std::vector<std::string> ids = d.value("cdiDeviceIds", std::vector<std::string>{});
    const std::string id = CdiDeviceId(driver, claim.uid, d.value("device", ""));
    if (ids != std::vector<std::string>{id}) {
      out->push_back(Cat({what, ": checkpoint CDI ids of ", d.value("device", ""), " are ",
                          Quoted(ids), ", want [", id, "]"}));
    }
  }
  const auto spec = disk.specs.find(claim.uid);
  const std::string recorded = entry.value("cdiSpec", "");
  if (recorded.empty()) {
    if (ours) out->push_back(what + ": no CDI spec recorded in the checkpoint");
    if (spec != disk.specs.end()) out->push_back(what + ": a CDI spec file for nothing recorded");
    return;
  }
  if (spec == disk.specs.end()) {
    out->push_back(what + ": in the checkpoint without its CDI spec file");
    return;
  }
  const json recorded_spec = json::parse(recorded, nullptr, /*allow_exceptions=*/false);
  if (recorded_spec != spec->second) {
    out->push_back(what + ": the CDI spec file differs from the one the checkpoint recorded");
  }
  std::vector<std::string> names = Names(spec->second.value("devices", json::array()), "name");
  std::vector<std::string> want_names;
  for (const std::string& d : want) want_names.push_back(claim.uid + "-" + d);
  std::sort(names.begin(), names.end());
  std::sort(want_names.begin(), want_names.end());
  if (names != want_names) {
    out->push_back(what + ": CDI spec devices " + Quoted(names) + ", want " + Quoted(want_names));
  }
}

}  // namespace

StatusOr<PluginDisk> ReadPluginDisk(const std::string& state_dir, const std::string& cdi_dir,
                                    const std::string& driver) {
  PluginDisk disk;
  const fs::path checkpoint = fs::path(state_dir) / "checkpoint.json";
  std::error_code ec;
  if (fs::exists(checkpoint, ec)) {
    ASSIGN_OR_RETURN(json doc, ReadJson(checkpoint));
    if (!doc.is_object() || doc.value("version", 0) != 1 || !doc.contains("data") ||
        !doc["data"].is_object() || !doc["data"].value("claims", json()).is_array()) {
      return DataLossError("read " + checkpoint.string() +
                           ": not a version 1 checkpoint with data.claims");
    }
    for (const json& c : doc["data"]["claims"]) {
      const std::string uid = c.is_object() ? c.value("uid", "") : "";
      if (uid.empty() || disk.checkpoint.contains(uid)) {
        return DataLossError("read " + checkpoint.string() + ": a claim without a uid, or twice");
      }
      disk.checkpoint[uid] = c;
    }
  }
  const std::string prefix = SpecPrefix(driver);
  for (const fs::directory_entry& e : fs::directory_iterator(cdi_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(prefix.size());
    if (!rest.ends_with(".json")) {
      disk.stray.push_back(name);
      continue;
    }
    StatusOr<json> spec = ReadJson(e.path());
    if (!spec.ok()) {
      disk.stray.push_back(name + " (" + spec.status().message() + ")");
      continue;
    }
    disk.specs[rest.substr(0, rest.size() - 5)] = *std::move(spec);
  }
  if (ec) return DataLossError("list " + cdi_dir + ": " + ec.message());
  return disk;
}

std::string CdiDeviceId(const std::string& driver, const std::string& claim_uid,
                        const std::string& device) {
  return "k8s." + driver + "/device=" + claim_uid + "-" + device;
}

std::vector<std::string> CheckAnswer(const TrialClaim& claim,
                                     const std::vector<KubeletDevice>& answer,
                                     const std::string& node, const std::string& driver) {
  std::vector<std::string> out;
  const std::string what = "prepare answer for claim " + claim.name + " (" + claim.uid + ")";
  const std::vector<std::string> want =
      claim.pool == node ? claim.devices : std::vector<std::string>{};
  std::vector<std::string> have;
  for (const KubeletDevice& d : answer) have.push_back(d.device_name);
  if (have != want) {
    out.push_back(what + ": devices " + Quoted(have) + ", allocated " + Quoted(want));
    return out;
  }
  for (const KubeletDevice& d : answer) {
    const std::vector<std::string> ids = {CdiDeviceId(driver, claim.uid, d.device_name)};
    if (d.pool_name != node || d.cdi_device_ids != ids ||
        d.request_names != std::vector<std::string>{"npus"}) {
      out.push_back(Cat({what, ": device ", d.device_name, " answered as pool ", d.pool_name,
                         ", CDI ids ", Quoted(d.cdi_device_ids), ", requests ",
                         Quoted(d.request_names), "; want ", node, ", ", Quoted(ids), ", [npus]"}));
    }
  }
  return out;
}

std::vector<std::string> CheckPluginDisk(const std::vector<TrialClaim>& claims,
                                         const std::set<std::string>& prepared,
                                         const PluginDisk& disk, const std::string& node,
                                         const std::string& driver) {
  std::vector<std::string> out;
  std::map<std::string, const TrialClaim*> by_uid;
  for (const TrialClaim& c : claims) by_uid[c.uid] = &c;
  std::map<std::string, std::string> holder;  // device -> the claim whose entry holds it
  for (const auto& [uid, entry] : disk.checkpoint) {
    const auto known = by_uid.find(uid);
    const std::string what =
        "claim " + (known == by_uid.end() ? "?" : known->second->name) + " (" + uid + ")";
    if (!prepared.contains(uid)) {
      out.push_back(what + ": in the checkpoint, but the kubelet last unprepared it (or never " +
                    "prepared it)");
    }
    for (const json& d : entry.value("devices", json::array())) {
      const std::string device = d.value("device", "");
      const auto [it, fresh] = holder.emplace(device, uid);
      if (!fresh) {
        out.push_back(Cat({"device ", device, " is held by claims ", it->second, " and ", uid}));
      }
    }
    if (known != by_uid.end()) CheckEntry(*known->second, entry, disk, node, driver, what, &out);
  }
  for (const std::string& uid : prepared) {
    if (disk.checkpoint.contains(uid)) continue;
    const auto known = by_uid.find(uid);
    out.push_back("claim " + (known == by_uid.end() ? "?" : known->second->name) + " (" + uid +
                  ") lost: the kubelet holds it prepared, the checkpoint does not");
  }
  for (const auto& [uid, spec] : disk.specs) {
    if (!disk.checkpoint.contains(uid)) {
      out.push_back("CDI spec " + SpecPrefix(driver) + uid + ".json without a checkpoint entry");
    }
  }
  for (const std::string& name : disk.stray) out.push_back("stray file in the CDI dir: " + name);
  return out;
}

json NormalizedDevices(const json& devices) {
  json out = devices.is_array() ? devices : json::array();
  for (json& d : out) {
    if (d.is_object() && d.contains("attributes") && d["attributes"].is_object() &&
        d["attributes"].erase("gang") > 0 && d["attributes"].empty()) {
      d.erase("attributes");
    }
    if (!d.is_object() || !d.contains("taints") || !d["taints"].is_array()) continue;
    for (json& t : d["taints"]) {
      if (t.is_object()) t.erase("timeAdded");
    }
  }
  return out;
}

std::vector<json> GoldenSlices(const json& list) {
  std::vector<json> out;
  for (const json& s : list.value("items", json::array())) {
    out.push_back(NormalizedDevices(s.value("/spec/devices"_json_pointer, json::array())));
  }
  return out;
}

std::map<std::string, int64_t> PoolGenerations(const std::vector<json>& slices) {
  std::map<std::string, int64_t> out;
  for (const json& s : slices) {
    const std::string pool = s.value("/spec/pool/name"_json_pointer, "");
    const int64_t generation = s.value("/spec/pool/generation"_json_pointer, int64_t{0});
    auto [it, fresh] = out.emplace(pool, generation);
    if (!fresh) it->second = std::max(it->second, generation);
  }
  return out;
}

namespace {

std::string FirstDeviceName(const json& devices) {
  return devices.empty() ? "" : devices.front().value("name", "");
}

// One wanted pool against its slices (at least one).
void ComparePool(const std::string& pool, const ExpectedPool& want,
                 const std::vector<const json*>& slices, int64_t generation,
                 std::vector<std::string>* out) {
  std::vector<const json*> current;
  for (const json* s : slices) {
    const int64_t g = s->value("/spec/pool/generation"_json_pointer, int64_t{0});
    if (g == generation) {
      current.push_back(s);
      continue;
    }
    out->push_back("pool " + pool + ": obsolete slice " +
                   s->value("/metadata/name"_json_pointer, "") + " at generation " +
                   std::to_string(g) + " < " + std::to_string(generation));
  }
  for (const json* s : current) {
    const std::string name = s->value("/metadata/name"_json_pointer, "");
    const int64_t count = s->value("/spec/pool/resourceSliceCount"_json_pointer, int64_t{0});
    if (count != static_cast<int64_t>(current.size())) {
      out->push_back(
          Cat({"pool ", pool, ": slice ", name, " says resourceSliceCount ", std::to_string(count),
               ", the generation has ", std::to_string(current.size())}));
    }
    if (s->value("/spec/nodeName"_json_pointer, "") != pool) {
      out->push_back(Cat({"pool ", pool, ": slice ", name, " has nodeName ",
                          s->value("/spec/nodeName"_json_pointer, "")}));
    }
    const json owners = s->value("/metadata/ownerReferences"_json_pointer, json::array());
    const bool owned = std::any_of(owners.begin(), owners.end(), [&](const json& o) {
      return o.value("kind", "") == "Node" && o.value("name", "") == pool &&
             o.value("uid", "") == want.node_uid;
    });
    if (!owned) {
      out->push_back(Cat({"pool ", pool, ": slice ", name, " is not owned by Node ", pool, " (",
                          want.node_uid, "): ", owners.dump()}));
    }
  }
  std::map<std::string, std::string> seen;  // device -> slice
  std::vector<json> have;
  for (const json* s : current) {
    const std::string name = s->value("/metadata/name"_json_pointer, "");
    have.push_back(NormalizedDevices(s->value("/spec/devices"_json_pointer, json::array())));
    for (const json& d : have.back()) {
      const auto [it, fresh] = seen.emplace(d.value("name", ""), name);
      if (!fresh) {
        out->push_back(
            Cat({"pool ", pool, ": device ", it->first, " in slices ", it->second, " and ", name}));
      }
    }
  }
  if (have.size() != want.slices.size()) {
    out->push_back("pool " + pool + ": " + std::to_string(have.size()) +
                   " slices at the pool's generation, want " + std::to_string(want.slices.size()));
    return;
  }
  std::vector<json> wanted = want.slices;
  const auto by_first = [](const json& a, const json& b) {
    return FirstDeviceName(a) < FirstDeviceName(b);
  };
  std::sort(have.begin(), have.end(), by_first);
  std::sort(wanted.begin(), wanted.end(), by_first);
  for (size_t i = 0; i < have.size(); ++i) {
    if (have[i] == wanted[i]) continue;
    size_t k = 0;
    while (k < have[i].size() && k < wanted[i].size() && have[i][k] == wanted[i][k]) ++k;
    const std::string at =
        k < wanted[i].size() ? wanted[i][k].value("name", "") : "(past the wanted end)";
    out->push_back(Cat({"pool ", pool, ": devices differ from the inventory's from #",
                        std::to_string(k), " (", at, "): ", std::to_string(have[i].size()),
                        " published, ", std::to_string(wanted[i].size()), " wanted"}));
  }
}

}  // namespace

std::vector<std::string> SliceDifferences(const std::map<std::string, ExpectedPool>& want,
                                          const std::vector<json>& slices) {
  std::vector<std::string> out;
  std::map<std::string, std::vector<const json*>> pools;
  for (const json& s : slices) pools[s.value("/spec/pool/name"_json_pointer, "")].push_back(&s);
  const std::map<std::string, int64_t> generations = PoolGenerations(slices);
  for (const auto& [pool, list] : pools) {
    if (want.contains(pool) || pool == api::kGangPoolName) continue;
    for (const json* s : list) {
      out.push_back(Cat({"orphan slice ", s->value("/metadata/name"_json_pointer, ""), " of pool ",
                         pool, ", which should not be published"}));
    }
  }
  for (const auto& [pool, expected] : want) {
    const auto it = pools.find(pool);
    if (it == pools.end()) {
      out.push_back("pool " + pool + " is not published");
      continue;
    }
    ComparePool(pool, expected, it->second, generations.at(pool), &out);
  }
  return out;
}

SliceWrites WritesNeeded(const std::string& pool, const ExpectedPool* want,
                         const std::vector<json>& slices) {
  SliceWrites out;
  const auto have = static_cast<int64_t>(slices.size());
  if (want == nullptr) {
    out.remove = have;
    return out;
  }
  if (SliceDifferences({{pool, *want}}, slices).empty()) return out;
  const auto wanted = static_cast<int64_t>(want->slices.size());
  out.update = std::min(have, wanted);
  out.create = wanted - out.update;
  out.remove = have - out.update;
  return out;
}

namespace {

std::string GangName(const json& gang) {
  return gang.value("/metadata/namespace"_json_pointer, "") + "/" +
         gang.value("/metadata/name"_json_pointer, "");
}

json GangStatus(const json& gang) {
  const json status = gang.value("status", json::object());
  return status.is_object() ? status : json::object();
}

bool Placed(const json& gang) { return GangStatus(gang).value("phase", "") == "Placed"; }

// The member nodes a gang's status names, in its order.
std::vector<std::string> GangMembers(const json& gang) {
  std::vector<std::string> out;
  for (const json& n : GangStatus(gang).value("nodes", json::array())) {
    out.push_back(n.is_object() ? n.value("name", "") : "");
  }
  return out;
}

// A Placed gang's status against its spec; `what` names the gang.
void CheckPlacedStatus(const json& gang, const std::string& what, std::vector<std::string>* out) {
  const json status = GangStatus(gang);
  const int64_t want_nodes = gang.value("/spec/nodes"_json_pointer, int64_t{0});
  const int64_t per_node = gang.value("/spec/devicesPerNode"_json_pointer, int64_t{0});
  const json nodes = status.value("nodes", json::array());
  if (static_cast<int64_t>(nodes.size()) != want_nodes) {
    out->push_back(Cat({what, ": Placed on ", std::to_string(nodes.size()),
                        " nodes, spec.nodes is ", std::to_string(want_nodes)}));
  }
  std::set<std::pair<std::string, std::string>> devices;  // (node, device) the status holds
  std::set<int64_t> node_ranks;
  for (const json& n : nodes) {
    const std::string name = n.value("name", "");
    node_ranks.insert(n.value("rank", int64_t{-1}));
    const std::vector<std::string> held = n.value("devices", std::vector<std::string>{});
    const std::set<std::string> distinct(held.begin(), held.end());
    if (static_cast<int64_t>(distinct.size()) != per_node || distinct.size() != held.size()) {
      out->push_back(Cat({what, ": node ", name, " holds devices ", Quoted(held), ", want ",
                          std::to_string(per_node), " distinct"}));
    }
    for (const std::string& d : held) devices.emplace(name, d);
  }
  if (node_ranks.size() != nodes.size() ||
      (!node_ranks.empty() && (*node_ranks.begin() != 0 ||
                               *node_ranks.rbegin() != static_cast<int64_t>(nodes.size()) - 1))) {
    out->push_back(what + ": node ranks are not 0.." + std::to_string(nodes.size() - 1) +
                   " each once");
  }
  const json table = status.value("rankTable", json::array());
  std::set<std::pair<std::string, std::string>> ranked;
  std::set<int64_t> ranks;
  for (const json& r : table) {
    const std::pair<std::string, std::string> at{r.value("node", ""), r.value("device", "")};
    ranks.insert(r.value("rank", int64_t{-1}));
    if (!devices.contains(at) || !ranked.insert(at).second) {
      out->push_back(Cat({what, ": rank table entry ", r.dump(),
                          " names a device the status does not hold, or one held twice"}));
    }
  }
  const bool dense = ranks.size() == table.size() &&
                     (ranks.empty() || (*ranks.begin() == 0 &&
                                        *ranks.rbegin() == static_cast<int64_t>(table.size()) - 1));
  if (ranked != devices || table.size() != devices.size() || !dense) {
    out->push_back(Cat({what, ": the rank table has ", std::to_string(table.size()),
                        " entries for ", std::to_string(devices.size()),
                        " held devices, or its ranks are not 0..N-1 each once"}));
  }
}

// The attribute gang of a device, "" without one.
std::string GangAttribute(const json& device) {
  return device.value("/attributes/gang/string"_json_pointer, "");
}

// The hostnames a gang slice selects: its one term's kubernetes.io/hostname In values, sorted.
std::vector<std::string> SelectedNodes(const json& slice) {
  std::vector<std::string> out;
  for (const json& term :
       slice.value("/spec/nodeSelector/nodeSelectorTerms"_json_pointer, json::array())) {
    for (const json& e : term.value("matchExpressions", json::array())) {
      if (e.value("key", "") != "kubernetes.io/hostname" || e.value("operator", "") != "In") {
        continue;
      }
      for (const json& v : e.value("values", json::array())) {
        if (v.is_string()) out.push_back(v.get<std::string>());
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A Placed gang's slice in the gang pool; `what` names the gang.
void CheckGangSlice(const json& gang, const std::string& slice_name, const json* slice,
                    const std::string& what, std::vector<std::string>* out) {
  const std::string name = gang.value("/metadata/name"_json_pointer, "");
  const std::string uid = gang.value("/metadata/uid"_json_pointer, "");
  if (slice == nullptr) {
    out->push_back(what + ": Placed, but its gang slice " + slice_name + " is missing");
    return;
  }
  std::vector<std::string> members = GangMembers(gang);
  std::sort(members.begin(), members.end());
  if (SelectedNodes(*slice) != members) {
    out->push_back(Cat({what, ": its gang slice selects ", Quoted(SelectedNodes(*slice)),
                        ", the status holds ", Quoted(members)}));
  }
  const json devices = slice->value("/spec/devices"_json_pointer, json::array());
  const bool one = devices.size() == 1 && devices[0].value("name", "") == "gang-" + name &&
                   GangAttribute(devices[0]) == uid &&
                   devices[0].value("/attributes/gangNodes/int"_json_pointer, int64_t{-1}) ==
                       static_cast<int64_t>(members.size());
  if (!one) {
    out->push_back(what + ": its gang slice's devices are not the one device gang-" + name +
                   " with gang " + uid + " and gangNodes " + std::to_string(members.size()) + ": " +
                   devices.dump());
  }
}

}  // namespace

std::vector<std::string> GangReservationDifferences(const std::vector<json>& gangs) {
  std::vector<std::string> out;
  std::map<std::string, std::string> holder;  // node -> the gang holding it
  for (const json& gang : gangs) {
    const std::string what = "gang " + GangName(gang);
    const json status = GangStatus(gang);
    if (!Placed(gang)) {
      const size_t nodes = status.value("nodes", json::array()).size();
      const size_t ranks = status.value("rankTable", json::array()).size();
      if (status.value("phase", "") == "Failed" && nodes + ranks > 0) {
        // Final; the status keeps where it was placed (a record, holding no node): still whole.
        CheckPlacedStatus(gang, what + " (Failed, its last placement)", &out);
      } else if (nodes + ranks > 0) {
        out.push_back(Cat({what, ": phase \"", status.value("phase", ""), "\" but it holds ",
                           std::to_string(nodes), " nodes and ", std::to_string(ranks),
                           " ranks (a partial reservation)"}));
      }
      continue;
    }
    CheckPlacedStatus(gang, what, &out);
    for (const std::string& node : GangMembers(gang)) {
      const auto [it, fresh] = holder.emplace(node, GangName(gang));
      if (!fresh) {
        out.push_back(
            Cat({"node ", node, " is held by gangs ", it->second, " and ", GangName(gang)}));
      }
    }
  }
  return out;
}

std::vector<std::string> UnjudgedGangs(const std::vector<json>& gangs) {
  std::vector<std::string> out;
  for (const json& gang : gangs) {
    const int64_t generation = gang.value("/metadata/generation"_json_pointer, int64_t{0});
    const json status = GangStatus(gang);
    const json observed = status.value("observedGeneration", json());
    if (!observed.is_number_integer() || observed.get<int64_t>() < generation) {
      out.push_back(Cat({"gang ", GangName(gang), ": generation ", std::to_string(generation),
                         " not yet observed by its status (",
                         observed.is_null() ? std::string("none") : observed.dump(), ")"}));
    }
  }
  return out;
}

std::vector<std::string> GangDifferences(const GangWorld& world,
                                         const std::set<std::string>& live) {
  std::vector<std::string> out = GangReservationDifferences(world.gangs);
  std::map<std::string, const json*> gang_slices;                // slice name -> slice
  std::map<std::string, std::vector<const json*>> pool_devices;  // node pool -> its devices
  for (const json& s : world.slices) {
    const std::string pool = s.value("/spec/pool/name"_json_pointer, "");
    if (pool == api::kGangPoolName) {
      gang_slices[s.value("/metadata/name"_json_pointer, "")] = &s;
      continue;
    }
    auto& list = pool_devices[pool];
    const json::json_pointer at("/spec/devices");
    if (!s.contains(at) || !s.at(at).is_array()) continue;
    for (const json& d : s.at(at)) list.push_back(&d);  // pointers into `world`, not a copy
  }
  std::map<std::string, std::string> held;  // node -> uid of the Placed gang holding it
  std::set<std::string> owned_slices;       // gang slice names of Placed gangs
  for (const json& gang : world.gangs) {
    if (!Placed(gang)) continue;
    const std::string what = "gang " + GangName(gang);
    const std::string ns = gang.value("/metadata/namespace"_json_pointer, "");
    const std::string name = gang.value("/metadata/name"_json_pointer, "");
    const std::string uid = gang.value("/metadata/uid"_json_pointer, "");
    for (const std::string& node : GangMembers(gang)) {
      held[node] = uid;
      if (!live.contains(node)) {
        out.push_back(Cat({what, ": Placed on node ", node, ", which has no Node or inventory"}));
        continue;
      }
      for (const json* d : pool_devices[node]) {
        if (GangAttribute(*d) != uid) {
          out.push_back(Cat({what, ": device ", d->value("name", ""), " of member node ", node,
                             " has gang \"", GangAttribute(*d), "\", want ", uid}));
        }
      }
    }
    const std::string slice = Cat({"xpu-dra-gang.", ns, ".", name});
    owned_slices.insert(slice);
    const auto it = gang_slices.find(slice);
    CheckGangSlice(gang, slice, it == gang_slices.end() ? nullptr : it->second, what, &out);
    if (!world.claims.contains(Cat({ns, "/", name, "-gang"}))) {
      out.push_back(Cat({what, ": Placed, but its shared claim ", name, "-gang is missing"}));
    }
    if (!world.templates.contains(Cat({ns, "/", name, "-member"}))) {
      out.push_back(Cat({what, ": Placed, but its template ", name, "-member is missing"}));
    }
  }
  for (const auto& [slice, object] : gang_slices) {
    if (!owned_slices.contains(slice)) {
      out.push_back("gang slice " + slice + " of no Placed gang (a gang not placed, or gone)");
    }
  }
  for (const auto& [pool, devices] : pool_devices) {
    const auto h = held.find(pool);
    for (const json* d : devices) {
      const std::string uid = GangAttribute(*d);
      if (!uid.empty() && (h == held.end() || h->second != uid)) {
        out.push_back(Cat({"device ", d->value("name", ""), " of node ", pool, " has gang ", uid,
                           ", which does not hold the node"}));
      }
    }
  }
  return out;
}

}  // namespace xpu::e2e::trials
