#include "e2e/trials/invariants.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

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
    if (want.contains(pool)) continue;
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

}  // namespace xpu::e2e::trials
