#include "kubeletplugin/cdi/cdi.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <type_traits>
#include <utility>

#include "api/codec/codec.h"
#include "base/atomic_file.h"

namespace xpu::cdi {

namespace codec = api::codec;

// What a spec file may hold, in the CDI order (OrderedWriter below writes them so). Strict:
// a member the model lacks (annotations, device node major/minor, ...) is an unknown field; a
// null member reads as absent, as in the CDI library.
template <typename V, codec::FieldsOf<DeviceNode> S>
void VisitFields(V& v, S& node) {
  v.Required("path", node.path);
  v.Optional("hostPath", node.host_path);
  v.Optional("permissions", node.permissions);
}

template <typename V, codec::FieldsOf<Mount> S>
void VisitFields(V& v, S& mount) {
  v.Required("hostPath", mount.host_path);
  v.Required("containerPath", mount.container_path);
  v.Optional("options", mount.options);
  v.Optional("type", mount.type);
}

template <typename V, codec::FieldsOf<Hook> S>
void VisitFields(V& v, S& hook) {
  v.Required("hookName", hook.hook_name);
  v.Required("path", hook.path);
  v.Optional("args", hook.args);
  v.Optional("env", hook.env);
  v.Optional("timeout", hook.timeout);
}

template <typename V, codec::FieldsOf<ContainerEdits> S>
void VisitFields(V& v, S& edits) {
  v.Optional("env", edits.env);
  v.Optional("deviceNodes", edits.device_nodes);
  v.Optional("mounts", edits.mounts);
  v.Optional("hooks", edits.hooks);
}

template <typename V, codec::FieldsOf<Device> S>
void VisitFields(V& v, S& device) {
  v.Required("name", device.name);
  v.Optional("containerEdits", device.edits);
}

namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The versions the CDI library knows, oldest first (docs/reference/dra-api.md §4.1); 0.3.0 is the
// earliest a current runtime accepts.
constexpr std::array<std::string_view, 8> kKnownVersions = {"0.3.0", "0.4.0", "0.5.0", "0.6.0",
                                                            "0.7.0", "0.8.0", "1.0.0", "1.1.0"};

int VersionRank(std::string_view version) {
  for (size_t i = 0; i < kKnownVersions.size(); ++i) {
    if (kKnownVersions[i] == version) return static_cast<int>(i);
  }
  return -1;
}

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsLetter(c) || IsDigit(c); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The part after '/' of "<vendor>/<class>"; "" without a '/'.
std::string_view ClassOf(std::string_view kind) {
  const size_t slash = kind.find('/');
  return slash == std::string_view::npos ? std::string_view() : kind.substr(slash + 1);
}

// Vendor and class: a letter, then [A-Za-z0-9_.-], ending alphanumeric.
Status CheckKindPart(std::string_view part, std::string_view what, size_t max_length) {
  if (part.empty()) return InvalidArgumentError(std::string(what) + " is empty");
  if (part.size() > max_length) {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(part) +
                                "\" is longer than " + std::to_string(max_length) + " characters");
  }
  if (!IsLetter(part.front())) {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(part) +
                                "\" must start with a letter");
  }
  for (const char c : part) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != '-') {
      return InvalidArgumentError(std::string(what) + " \"" + std::string(part) +
                                  "\" has the invalid character '" + std::string(1, c) + "'");
    }
  }
  if (!IsAlnum(part.back())) {
    return InvalidArgumentError(std::string(what) + " \"" + std::string(part) +
                                "\" must end with a letter or digit");
  }
  return OkStatus();
}

Status CheckKind(const std::string& kind) {
  const size_t slash = kind.find('/');
  if (slash == std::string::npos) {
    return InvalidArgumentError("\"" + kind + "\" is not of the form <vendor>/<class>");
  }
  const std::string_view view = kind;
  RETURN_IF_ERROR(CheckKindPart(view.substr(0, slash), "vendor", 253));
  return CheckKindPart(view.substr(slash + 1), "class", 63);
}

Status CheckDeviceName(const std::string& name) {
  if (name.empty()) return InvalidArgumentError("empty device name");
  if (!IsAlnum(name.front())) {
    return InvalidArgumentError("\"" + name + "\" must start with a letter or digit");
  }
  for (const char c : name) {
    if (!IsAlnum(c) && c != '_' && c != '.' && c != ':' && c != '-') {
      return InvalidArgumentError("\"" + name + "\" has the invalid character '" +
                                  std::string(1, c) + "'");
    }
  }
  if (!IsAlnum(name.back())) {
    return InvalidArgumentError("\"" + name + "\" must end with a letter or digit");
  }
  return OkStatus();
}

Status CheckAbsolute(const std::string& path) {
  if (path.empty()) return InvalidArgumentError("empty path");
  if (path.front() != '/') return InvalidArgumentError("\"" + path + "\" is not absolute");
  return OkStatus();
}

Status CheckPermissions(const std::string& permissions) {
  if (permissions == "none") return OkStatus();  // the node without a cgroup rule
  std::set<char> seen;
  for (const char c : permissions) {
    if (c != 'r' && c != 'w' && c != 'm') {
      return InvalidArgumentError("\"" + permissions +
                                  "\" is neither \"none\" nor a subset of \"rwm\"");
    }
    if (!seen.insert(c).second) {
      return InvalidArgumentError("\"" + permissions + "\" repeats '" + std::string(1, c) + "'");
    }
  }
  return OkStatus();
}

// `field` is the JSON path of the list, e.g. "devices[0].containerEdits.env".
Status CheckEnv(const std::vector<std::string>& env, const std::string& field) {
  for (size_t i = 0; i < env.size(); ++i) {
    const size_t eq = env[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError(field + "[" + std::to_string(i) + "]: \"" + env[i] +
                                  "\" is not NAME=VALUE");
    }
  }
  return OkStatus();
}

// The OCI hook points a CDI hook may name.
bool IsHookName(std::string_view name) {
  static constexpr std::array<std::string_view, 6> kNames = {
      "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

Status CheckHook(const Hook& hook, const std::string& at) {
  if (!IsHookName(hook.hook_name)) {
    return InvalidArgumentError(at + ".hookName: \"" + hook.hook_name +
                                "\" is not an OCI hook point");
  }
  RETURN_IF_ERROR(CheckAbsolute(hook.path).WithContext(at + ".path"));
  RETURN_IF_ERROR(CheckEnv(hook.env, at + ".env"));
  if (hook.timeout && *hook.timeout <= 0) {
    return InvalidArgumentError(at + ".timeout: " + std::to_string(*hook.timeout) +
                                " is not a positive number of seconds");
  }
  return OkStatus();
}

// `field` is the JSON path of the edits, e.g. "devices[0].containerEdits".
Status CheckEdits(const ContainerEdits& edits, const std::string& field) {
  RETURN_IF_ERROR(CheckEnv(edits.env, field + ".env"));
  for (size_t i = 0; i < edits.hooks.size(); ++i) {
    RETURN_IF_ERROR(CheckHook(edits.hooks[i], field + ".hooks[" + std::to_string(i) + "]"));
  }
  for (size_t i = 0; i < edits.device_nodes.size(); ++i) {
    const DeviceNode& n = edits.device_nodes[i];
    const std::string at = field + ".deviceNodes[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(CheckAbsolute(n.path).WithContext(at + ".path"));
    if (!n.host_path.empty()) {
      RETURN_IF_ERROR(CheckAbsolute(n.host_path).WithContext(at + ".hostPath"));
    }
    RETURN_IF_ERROR(CheckPermissions(n.permissions).WithContext(at + ".permissions"));
  }
  for (size_t i = 0; i < edits.mounts.size(); ++i) {
    const Mount& m = edits.mounts[i];
    const std::string at = field + ".mounts[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(CheckAbsolute(m.host_path).WithContext(at + ".hostPath"));
    RETURN_IF_ERROR(CheckAbsolute(m.container_path).WithContext(at + ".containerPath"));
    for (size_t j = 0; j < m.options.size(); ++j) {
      if (m.options[j].empty()) {
        return InvalidArgumentError(at + ".options[" + std::to_string(j) + "]: empty option");
      }
    }
  }
  return OkStatus();
}

// ---- JSON ----

template <typename T>
OrderedJson ToOrderedJson(const T& value);

// Writes the members a VisitFields above lists into an object, in the order listed (the CDI
// order): a Required one always, an Optional one unless empty or unset.
class OrderedWriter {
 public:
  template <typename T>
  void Required(const char* name, const T& value) {
    out_[name] = ToOrderedJson(value);
  }
  template <typename T>
  void Optional(const char* name, const T& value) {
    if constexpr (requires { value.has_value(); }) {
      if (value.has_value()) out_[name] = ToOrderedJson(*value);
    } else if (!value.empty()) {
      out_[name] = ToOrderedJson(value);
    }
  }
  OrderedJson Finish() && { return std::move(out_); }

 private:
  OrderedJson out_ = OrderedJson::object();
};

template <typename T>
OrderedJson ToOrderedJson(const T& value) {
  if constexpr (std::is_same_v<T, std::string> || std::is_arithmetic_v<T>) {
    return value;
  } else if constexpr (requires { value.begin(); }) {
    OrderedJson array = OrderedJson::array();
    for (const auto& item : value) array.push_back(ToOrderedJson(item));
    return array;
  } else {
    OrderedWriter writer;
    VisitFields(writer, value);
    return std::move(writer).Finish();
  }
}

// The document: cdiVersion around the spec.
struct SpecDocument {
  static constexpr bool kNullIsUnset = true;
  std::string cdi_version;
  Spec spec;
};

template <typename V, codec::FieldsOf<SpecDocument> S>
void VisitFields(V& v, S& doc) {
  v.Required("cdiVersion", doc.cdi_version);
  v.Required("kind", doc.spec.kind);
  v.Required("devices", doc.spec.devices);
  v.Optional("containerEdits", doc.spec.edits);
}

StatusOr<Spec> SpecFromJson(const Json& j) {
  if (!j.is_object()) return InvalidArgumentError("expected a JSON object");
  ASSIGN_OR_RETURN(SpecDocument doc, codec::Decode<SpecDocument>(j));
  if (VersionRank(doc.cdi_version) < 0) {
    return InvalidArgumentError("cdiVersion: unknown version \"" + doc.cdi_version + "\"");
  }
  // As the CDI library: the declared version must cover the fields used.
  const std::string needed = MinimumVersion(doc.spec);
  if (VersionRank(doc.cdi_version) < VersionRank(needed)) {
    return InvalidArgumentError("cdiVersion: \"" + doc.cdi_version + "\" is below \"" + needed +
                                "\" that the spec's fields need");
  }
  RETURN_IF_ERROR(Validate(doc.spec));
  return std::move(doc.spec);
}

// "<vendor>-<class>" of a kind: the file-name prefix of its specs.
std::string FilePrefix(const std::string& kind) {
  std::string prefix = kind;
  std::replace(prefix.begin(), prefix.end(), '/', '-');
  return prefix + "_";
}

}  // namespace

std::string MinimumVersion(const Spec& spec) {
  int rank = 0;  // 0.3.0
  const auto need = [&rank](std::string_view version) {
    rank = std::max(rank, VersionRank(version));
  };
  std::vector<const ContainerEdits*> edits = {&spec.edits};
  for (const Device& d : spec.devices) {
    // 0.5.0 allowed device names that start with a digit instead of a letter.
    if (!d.name.empty() && !IsLetter(d.name.front())) need("0.5.0");
    edits.push_back(&d.edits);
  }
  for (const ContainerEdits* e : edits) {
    for (const Mount& m : e->mounts) {
      if (!m.type.empty()) need("0.4.0");
    }
    for (const DeviceNode& n : e->device_nodes) {
      if (!n.host_path.empty()) need("0.5.0");
    }
  }
  // 0.6.0 allowed '.' in the class name (the vendor part always allowed it).
  if (ClassOf(spec.kind).find('.') != std::string_view::npos) need("0.6.0");
  return std::string(kKnownVersions[static_cast<size_t>(rank)]);
}

Status Validate(const Spec& spec) {
  RETURN_IF_ERROR(CheckKind(spec.kind).WithContext("kind"));
  if (spec.devices.empty()) {
    return InvalidArgumentError("devices: a spec needs at least one device");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const Device& d = spec.devices[i];
    const std::string at = "devices[" + std::to_string(i) + "]";
    RETURN_IF_ERROR(CheckDeviceName(d.name).WithContext(at + ".name"));
    if (!names.insert(d.name).second) {
      return InvalidArgumentError(at + ".name: duplicate device \"" + d.name + "\"");
    }
    if (d.edits.empty()) {
      return InvalidArgumentError(at + ".containerEdits: a device needs at least one edit");
    }
    RETURN_IF_ERROR(CheckEdits(d.edits, at + ".containerEdits"));
  }
  return CheckEdits(spec.edits, "containerEdits");
}

std::string ToJson(const Spec& spec) {
  OrderedJson out = OrderedJson::object();
  out["cdiVersion"] = MinimumVersion(spec);
  out["kind"] = spec.kind;
  OrderedJson devices = OrderedJson::array();
  for (const Device& d : spec.devices) {
    OrderedJson device = OrderedJson::object();
    device["name"] = d.name;
    device["containerEdits"] = ToOrderedJson(d.edits);
    devices.push_back(std::move(device));
  }
  out["devices"] = std::move(devices);
  if (!spec.edits.empty()) out["containerEdits"] = ToOrderedJson(spec.edits);
  return out.dump(2) + "\n";
}

StatusOr<Spec> FromJson(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    return InvalidArgumentError(std::string("parse cdi spec: invalid JSON: ") + e.what());
  }
  StatusOr<Spec> spec = SpecFromJson(j);
  if (!spec.ok()) return spec.status().WithContext("parse cdi spec");
  return spec;
}

std::string QualifiedName(const std::string& kind, const std::string& device_name) {
  return kind + "=" + device_name;
}

std::string KindForDriver(const std::string& driver_name) {
  return "k8s." + driver_name + "/device";
}

bool IsValidClaimUid(const std::string& uid) {
  if (uid.size() != 36) return false;
  for (size_t i = 0; i < uid.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? uid[i] != '-' : !IsHex(uid[i])) return false;
  }
  return true;
}

SpecStore::SpecStore(std::string dir, std::string kind)
    : dir_(std::move(dir)), kind_(std::move(kind)) {}

std::string SpecStore::PathFor(const std::string& claim_uid) const {
  return dir_ + "/" + FilePrefix(kind_) + claim_uid + ".json";
}

StatusOr<std::string> SpecStore::Write(const std::string& claim_uid, const Spec& spec) {
  const std::string what = "write cdi spec for claim \"" + claim_uid + "\"";
  if (!IsValidClaimUid(claim_uid)) return InvalidArgumentError(what + ": not a valid claim uid");
  if (spec.kind != kind_) {
    return InvalidArgumentError(what + ": kind \"" + spec.kind + "\" is not the store's \"" +
                                kind_ + "\"");
  }
  RETURN_IF_ERROR(Validate(spec).WithContext(what));
  RETURN_IF_ERROR(MakeDirectories(dir_, 0755).WithContext(what));
  std::string text = ToJson(spec);
  RETURN_IF_ERROR(WriteFileAtomically(PathFor(claim_uid), text, 0644).WithContext(what));
  return text;
}

Status SpecStore::Remove(const std::string& claim_uid) {
  const std::string what = "remove cdi spec for claim \"" + claim_uid + "\"";
  if (!IsValidClaimUid(claim_uid)) return InvalidArgumentError(what + ": not a valid claim uid");
  return RemoveFileDurably(PathFor(claim_uid)).WithContext(what);
}

StatusOr<std::vector<std::string>> SpecStore::ListClaims() const {
  std::vector<std::string> uids;
  DIR* dir = ::opendir(dir_.c_str());
  if (dir == nullptr) {
    if (errno == ENOENT) return uids;
    return InternalError("list cdi specs in " + dir_ + ": " + std::strerror(errno));
  }
  const std::string prefix = FilePrefix(kind_);
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    const bool temp = rest.ends_with(".json.tmp");
    if (temp) {
      rest.remove_suffix(4);
    }
    if (!rest.ends_with(".json")) continue;
    rest.remove_suffix(5);
    const std::string uid(rest);
    if (!IsValidClaimUid(uid)) continue;
    if (temp) {
      stale.emplace_back(name);
    } else {
      uids.push_back(uid);
    }
  }
  ::closedir(dir);
  // A temp file is a write that never reached its rename (a crash): the old spec, if any, stands.
  for (const std::string& name : stale) {
    const std::string path = dir_ + "/" + name;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return InternalError("remove stale cdi temp file " + path + ": " + std::strerror(errno));
    }
  }
  std::sort(uids.begin(), uids.end());
  return uids;
}

StatusOr<Spec> SpecStore::Read(const std::string& claim_uid) const {
  const std::string what = "read cdi spec for claim \"" + claim_uid + "\"";
  if (!IsValidClaimUid(claim_uid)) return InvalidArgumentError(what + ": not a valid claim uid");
  StatusOr<std::string> text = ReadWholeFile(PathFor(claim_uid));
  if (!text.ok()) return text.status().WithContext(what);
  StatusOr<Spec> spec = FromJson(*text);
  if (!spec.ok()) return spec.status().WithContext(what);
  if (spec->kind != kind_) {
    return DataLossError(what + ": kind \"" + spec->kind + "\" is not the store's \"" + kind_ +
                         "\"");
  }
  return spec;
}

}  // namespace xpu::cdi
