#include "kubeletplugin/checkpoint/checkpoint.h"

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "base/atomic_file.h"

namespace xpu::checkpoint {
namespace {

using Json = nlohmann::json;

// CRC-32C table for the reflected Castagnoli polynomial 0x1EDC6F41 (reversed: 0x82F63B78).
constexpr std::array<uint32_t, 256> MakeCrc32cTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F63B78U : crc >> 1;
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = MakeCrc32cTable();

std::string Hex8(uint32_t value) {
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", value);
  return buf;
}

// Compact, sorted keys; invalid UTF-8 (never in what the plugin records) is replaced rather than
// thrown.
std::string CanonicalDump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string_view StateName(ClaimState state) {
  return state == ClaimState::kPrepared ? "Prepared" : "Preparing";
}

// The canonical "data" value: nlohmann::json keeps object keys sorted, so dump() of equal data
// is byte-equal whatever order a writer used.
Json DataToJson(const Checkpoint& cp) {
  Json claims = Json::array();
  for (const auto& [uid, c] : cp.claims) {
    Json devices = Json::array();
    for (const Device& d : c.devices) {
      devices.push_back({{"requestNames", d.request_names},
                         {"pool", d.pool},
                         {"device", d.device},
                         {"cdiDeviceIds", d.cdi_device_ids},
                         {"shareId", d.share_id},
                         {"members", d.members}});
    }
    claims.push_back({{"uid", uid},
                      {"namespace", c.ns},
                      {"name", c.name},
                      {"state", StateName(c.state)},
                      {"devices", std::move(devices)},
                      {"cdiSpec", c.cdi_spec}});
  }
  return {{"bootId", cp.boot_id}, {"claims", std::move(claims)}};
}

// Strict object reading: every member required, none unknown.
class Fields {
 public:
  Fields(const Json& j, std::string at) : j_(j), at_(std::move(at)) {}
  Status Check(std::initializer_list<std::string_view> known) const {
    if (!j_.is_object()) return DataLossError(at_ + ": expected an object");
    const std::set<std::string_view> names(known);
    for (const auto& [key, value] : j_.items()) {
      if (!names.contains(key)) return DataLossError(Name(key) + ": unknown field");
    }
    for (const std::string_view k : known) {
      if (!j_.contains(std::string(k))) return DataLossError(Name(k) + ": missing field");
    }
    return OkStatus();
  }
  Status String(std::string_view key, std::string& out) const {
    const Json& v = j_.at(std::string(key));
    if (!v.is_string()) return DataLossError(Name(key) + ": expected a string");
    out = v.get<std::string>();
    return OkStatus();
  }
  Status Strings(std::string_view key, std::vector<std::string>& out) const {
    const Json& v = j_.at(std::string(key));
    if (!v.is_array()) return DataLossError(Name(key) + ": expected an array");
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        return DataLossError(Name(key) + "[" + std::to_string(i) + "]: expected a string");
      }
      out.push_back(v[i].get<std::string>());
    }
    return OkStatus();
  }
  std::string Name(std::string_view key) const { return at_ + "." + std::string(key); }

 private:
  const Json& j_;
  std::string at_;
};

StatusOr<Checkpoint> DataFromJson(const Json& data) {
  Checkpoint cp;
  const Fields top(data, "data");
  RETURN_IF_ERROR(top.Check({"bootId", "claims"}));
  RETURN_IF_ERROR(top.String("bootId", cp.boot_id));
  const Json& claims = data.at("claims");
  if (!claims.is_array()) return DataLossError("data.claims: expected an array");
  for (size_t i = 0; i < claims.size(); ++i) {
    const std::string at = "data.claims[" + std::to_string(i) + "]";
    const Fields f(claims[i], at);
    RETURN_IF_ERROR(f.Check({"uid", "namespace", "name", "state", "devices", "cdiSpec"}));
    Claim c;
    RETURN_IF_ERROR(f.String("uid", c.uid));
    RETURN_IF_ERROR(f.String("namespace", c.ns));
    RETURN_IF_ERROR(f.String("name", c.name));
    std::string state;
    RETURN_IF_ERROR(f.String("state", state));
    if (state == "Prepared") {
      c.state = ClaimState::kPrepared;
    } else if (state == "Preparing") {
      c.state = ClaimState::kPreparing;
    } else {
      return DataLossError(at + ".state: unknown state \"" + state.append("\""));
    }
    RETURN_IF_ERROR(f.String("cdiSpec", c.cdi_spec));
    const Json& devices = claims[i].at("devices");
    if (!devices.is_array()) return DataLossError(at + ".devices: expected an array");
    for (size_t k = 0; k < devices.size(); ++k) {
      const Fields df(devices[k], at + ".devices[" + std::to_string(k) + "]");
      RETURN_IF_ERROR(
          df.Check({"requestNames", "pool", "device", "cdiDeviceIds", "shareId", "members"}));
      Device d;
      RETURN_IF_ERROR(df.Strings("requestNames", d.request_names));
      RETURN_IF_ERROR(df.String("pool", d.pool));
      RETURN_IF_ERROR(df.String("device", d.device));
      RETURN_IF_ERROR(df.Strings("cdiDeviceIds", d.cdi_device_ids));
      RETURN_IF_ERROR(df.String("shareId", d.share_id));
      RETURN_IF_ERROR(df.Strings("members", d.members));
      c.devices.push_back(std::move(d));
    }
    if (c.uid.empty()) return DataLossError(at + ".uid: empty");
    if (cp.claims.contains(c.uid)) return DataLossError(at + ".uid: duplicate \"" + c.uid + "\"");
    std::string uid = c.uid;
    cp.claims.emplace(std::move(uid), std::move(c));
  }
  return cp;
}

StatusOr<Checkpoint> DecodeDocument(const std::string& text) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::exception& e) {
    return DataLossError(std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) return DataLossError("expected a JSON object");
  // The version first: another version may checksum or lay out its data differently.
  const auto version = doc.find("version");
  if (version == doc.end()) return DataLossError("missing field \"version\"");
  if (!version->is_number_integer()) return DataLossError("version: expected an integer");
  if (version->get<int64_t>() != kCheckpointVersion) {
    return DataLossError("unknown version " + std::to_string(version->get<int64_t>()) +
                         " (this plugin reads version " + std::to_string(kCheckpointVersion) + ")");
  }
  for (const auto& [key, value] : doc.items()) {
    if (key != "version" && key != "checksum" && key != "data") {
      return DataLossError("unknown field \"" + key + "\"");
    }
  }
  const auto checksum = doc.find("checksum");
  if (checksum == doc.end()) return DataLossError("missing field \"checksum\"");
  if (!checksum->is_string()) return DataLossError("checksum: expected a string");
  const auto data = doc.find("data");
  if (data == doc.end()) return DataLossError("missing field \"data\"");
  const std::string actual = Hex8(Crc32c(CanonicalDump(*data)));
  if (checksum->get<std::string>() != actual) {
    return DataLossError("checksum mismatch: the file says " + checksum->get<std::string>() +
                         ", its data has " + actual);
  }
  return DataFromJson(*data);
}

}  // namespace

uint32_t Crc32c(std::string_view bytes) {
  uint32_t crc = 0xFFFFFFFFU;
  for (const char c : bytes) {
    crc = (crc >> 8) ^ kCrc32cTable[(crc ^ static_cast<uint8_t>(c)) & 0xFFU];
  }
  return crc ^ 0xFFFFFFFFU;
}

std::string Encode(const Checkpoint& cp) {
  const std::string data = CanonicalDump(DataToJson(cp));
  return "{\"version\":" + std::to_string(kCheckpointVersion) + ",\"checksum\":\"" +
         Hex8(Crc32c(data)) + "\",\"data\":" + data + "}\n";
}

StatusOr<Checkpoint> Decode(const std::string& text, const std::string& what) {
  StatusOr<Checkpoint> cp = DecodeDocument(text);
  if (!cp.ok()) return DataLossError("read checkpoint " + what + ": " + cp.status().message());
  return cp;
}

CheckpointStore::CheckpointStore(std::string path) : path_(std::move(path)) {}

StatusOr<Checkpoint> CheckpointStore::Load() const {
  StatusOr<std::string> text = ReadWholeFile(path_);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Checkpoint{};
    return Status(text.status().code(),
                  "read checkpoint " + path_ + ": " + text.status().message());
  }
  return Decode(*text, path_);
}

Status CheckpointStore::Save(const Checkpoint& cp) {
  const std::string what = "write checkpoint " + path_;
  RETURN_IF_ERROR(MakeDirectories(DirectoryOf(path_), 0700).WithContext(what));
  RETURN_IF_ERROR(WriteFileAtomically(path_, Encode(cp), 0600).WithContext(what));
  ++writes_;
  return OkStatus();
}

}  // namespace xpu::checkpoint
