#include "kubeletplugin/checkpoint/checkpoint.h"

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <utility>

#include "api/codec/codec.h"
#include "base/atomic_file.h"

namespace xpu::checkpoint {

namespace codec = api::codec;

template <typename V, codec::FieldsOf<Device> S>
void VisitFields(V& v, S& self) {
  v.Required("requestNames", self.request_names);
  v.Required("pool", self.pool);
  v.Required("device", self.device);
  v.Required("cdiDeviceIds", self.cdi_device_ids);
  v.Required("shareId", self.share_id);
  v.Required("members", self.members);
}

template <typename V, codec::FieldsOf<Partition> S>
void VisitFields(V& v, S& self) {
  v.Required("claimUid", self.claim_uid);
  v.Required("device", self.device);
  v.Required("parent", self.parent);
  v.Required("kind", self.kind);
  v.Required("profile", self.profile);
  v.Required("placement", self.placement);
  v.Required("instance", self.instance);
  v.Required("id", self.id);
  v.Required("uuid", self.uuid);
  v.Required("state", self.state);
  v.Optional("idsBefore", self.ids_before);
}

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

// On disk every claim has "state": "Prepared" (version 1 of the format). Plugins before the
// compute-then-act prepare could also write "Preparing"; such an entry is read as prepared, as
// they did at start.
constexpr std::string_view kPrepared = "Prepared";
constexpr std::string_view kPreparing = "Preparing";

// The claims as the file lists them.
struct WireClaim {
  std::string uid;
  std::string ns;
  std::string name;
  std::string state;
  std::vector<Device> devices;
  std::string cdi_spec;
};

struct WireData {
  std::string boot_id;
  std::vector<WireClaim> claims;
  std::vector<Partition> partitions;
};

template <typename V, codec::FieldsOf<WireClaim> S>
void VisitFields(V& v, S& self) {
  v.Required("uid", self.uid);
  v.Required("namespace", self.ns);
  v.Required("name", self.name);
  v.Required("state", self.state);
  v.Required("devices", self.devices);
  v.Required("cdiSpec", self.cdi_spec);
}

template <typename V, codec::FieldsOf<WireData> S>
void VisitFields(V& v, S& self) {
  v.Required("bootId", self.boot_id);
  v.Required("claims", self.claims);
  // Absent while empty, so a file without partitions is what plugins before them wrote.
  v.Optional("partitions", self.partitions);
}

// The canonical "data" value: nlohmann::json keeps object keys sorted, so dump() of equal data
// is byte-equal whatever order a writer used.
Json DataToJson(const Checkpoint& cp) {
  WireData wire;
  wire.boot_id = cp.boot_id;
  for (const auto& [uid, c] : cp.claims) {
    wire.claims.push_back({uid, c.ns, c.name, std::string(kPrepared), c.devices, c.cdi_spec});
  }
  wire.partitions = cp.partitions;
  return codec::Encode(wire);
}

// Every member required, none unknown; any problem is data loss.
StatusOr<Checkpoint> DataFromJson(const Json& data) {
  WireData wire;
  if (Status s = codec::Read(codec::Field{&data, "data"}, &wire); !s.ok()) {
    return DataLossError(s.message());
  }
  Checkpoint cp;
  cp.boot_id = std::move(wire.boot_id);
  for (size_t i = 0; i < wire.claims.size(); ++i) {
    WireClaim& w = wire.claims[i];
    const std::string at = "data.claims[" + std::to_string(i) + "]";
    if (w.state != kPrepared && w.state != kPreparing) {
      return DataLossError(at + ".state: unknown state \"" + w.state + "\"");
    }
    if (w.uid.empty()) return DataLossError(at + ".uid: empty");
    if (cp.claims.contains(w.uid)) return DataLossError(at + ".uid: duplicate \"" + w.uid + "\"");
    Claim c{w.uid, std::move(w.ns), std::move(w.name), std::move(w.devices), std::move(w.cdi_spec)};
    cp.claims.emplace(std::move(w.uid), std::move(c));
  }
  for (size_t i = 0; i < wire.partitions.size(); ++i) {
    const Partition& p = wire.partitions[i];
    const std::string at = "data.partitions[" + std::to_string(i) + "]";
    if (p.state != kPartitionCreating && p.state != kPartitionCreated &&
        p.state != kPartitionDestroying && p.state != kPartitionStatic) {
      return DataLossError(at + ".state: unknown state \"" + p.state + "\"");
    }
    if (p.device.empty() || p.parent.empty()) return DataLossError(at + ": no device or parent");
    for (size_t j = 0; j < i; ++j) {
      if (wire.partitions[j].device == p.device) {
        return DataLossError(at + ".device: duplicate \"" + p.device + "\"");
      }
    }
  }
  cp.partitions = std::move(wire.partitions);
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
