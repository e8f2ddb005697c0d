// CDI (Container Device Interface) specs for prepared claims (docs/reference/dra-api.md §4): the
// spec model, the lowest cdiVersion its fields need, strict validation of names and kinds, and a
// store that writes one transient spec per claim atomically (temp file, fsync, rename, directory
// fsync).
#ifndef XPU_KUBELETPLUGIN_CDI_CDI_H_
#define XPU_KUBELETPLUGIN_CDI_CDI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace xpu::cdi {

struct DeviceNode {
  static constexpr bool kNullIsUnset = true;  // a null member in a spec file is absent
  std::string path;                           // in the container, e.g. "/dev/davinci3"
  std::string host_path;    // empty: same as path (a non-empty one needs cdiVersion 0.5.0)
  std::string permissions;  // subset of "rwm" or "none" (no cgroup rule); empty means rwm
  friend bool operator==(const DeviceNode&, const DeviceNode&) = default;
};

struct Mount {
  static constexpr bool kNullIsUnset = true;  // a null member in a spec file is absent
  std::string host_path;
  std::string container_path;
  std::vector<std::string> options;  // e.g. {"ro", "nosuid", "nodev", "bind"}
  std::string type;                  // needs 0.4.0 when set
  friend bool operator==(const Mount&, const Mount&) = default;
};

// An OCI hook the runtime runs for the container (xpu-cdi-hook: the loader's cache and soname
// links for the mounted driver libraries; docs/kubelet-plugin.md).
struct Hook {
  static constexpr bool kNullIsUnset = true;  // a null member in a spec file is absent
  std::string hook_name;                      // "createContainer", "prestart", ...
  std::string path;                           // absolute, in the runtime's namespace
  std::vector<std::string> args;              // args[0] is the program's name
  std::vector<std::string> env;               // "NAME=VALUE"; never empty for ours
  std::optional<int64_t> timeout;             // seconds, > 0
  friend bool operator==(const Hook&, const Hook&) = default;
};

struct ContainerEdits {
  static constexpr bool kNullIsUnset = true;  // a null member in a spec file is absent
  std::vector<std::string> env;               // "NAME=VALUE"
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  std::vector<Hook> hooks;
  bool empty() const {
    return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty();
  }
  friend bool operator==(const ContainerEdits&, const ContainerEdits&) = default;
};

struct Device {
  static constexpr bool kNullIsUnset = true;  // a null member in a spec file is absent
  std::string name;                           // "<claim-uid>-<device>"
  ContainerEdits edits;
  friend bool operator==(const Device&, const Device&) = default;
};

struct Spec {
  std::string kind;  // "k8s.xpu.dra.dev/device"
  std::vector<Device> devices;
  ContainerEdits edits;  // applied when any device of the spec is used
  friend bool operator==(const Spec&, const Spec&) = default;
};

// The lowest cdiVersion the spec's fields need ("0.3.0" at least).
std::string MinimumVersion(const Spec& spec);

// Checks kind, device names, env entries, paths and permissions as the CDI library does; the
// error names the field ("devices[1].name: ..."). Stricter than the library where it costs
// nothing: every path (device node, host path, mount paths) must be absolute, a permission letter
// may not repeat, a mount option may not be empty.
Status Validate(const Spec& spec);

// The JSON document, with cdiVersion = MinimumVersion(spec). Keys in a fixed order.
std::string ToJson(const Spec& spec);
// Parses a spec written by ToJson (and any strict CDI JSON of the fields above): a member the
// model lacks (annotations, hooks, device node major/minor, ...) is an "unknown field" error, null
// reads as absent, cdiVersion must be known and cover the fields used, and the result passes
// Validate. Errors are InvalidArgument naming the field.
StatusOr<Spec> FromJson(const std::string& text);

// "<kind>=<name>": the fully-qualified id the kubelet hands to the runtime.
std::string QualifiedName(const std::string& kind, const std::string& device_name);

// CDI kind of the driver: "k8s.<driver>/device".
std::string KindForDriver(const std::string& driver_name);

// One transient spec file per claim in `dir` (the runtime's dynamic CDI directory):
// "<vendor>-<class>_<claim-uid>.json", e.g. "k8s.xpu.dra.dev-device_<uid>.json". The claim uid
// is validated (RFC 4122 text form) before it becomes a file name. Files are mode 0644 (the
// runtime reads them), written temp file "<name>.tmp" + fsync + rename + fsync of the directory.
// Thread-compatible: the caller serialises calls for one claim.
class SpecStore {
 public:
  SpecStore(std::string dir, std::string kind);

  std::string PathFor(const std::string& claim_uid) const;
  // Validates the uid, the kind (must be the store's) and the spec before touching any file;
  // creates the directory (0755) when missing. Returns the JSON text written, which the
  // checkpoint records, so that a prepare encodes its spec once.
  StatusOr<std::string> Write(const std::string& claim_uid, const Spec& spec);
  // Removing a spec that is not there succeeds.
  Status Remove(const std::string& claim_uid);
  // Claim uids, sorted, of every spec of this kind in the directory; other files are left alone,
  // our own "<name>.json.tmp" files (a write cut short) are removed. A missing directory: none.
  StatusOr<std::vector<std::string>> ListClaims() const;
  // NotFound when there is no spec for the claim; DataLoss when it holds another kind.
  StatusOr<Spec> Read(const std::string& claim_uid) const;

  const std::string& dir() const { return dir_; }
  const std::string& kind() const { return kind_; }

 private:
  std::string dir_;
  std::string kind_;
};

// True when `uid` is the canonical text form of a UUID (what Kubernetes puts in metadata.uid).
bool IsValidClaimUid(const std::string& uid);

}  // namespace xpu::cdi

#endif  // XPU_KUBELETPLUGIN_CDI_CDI_H_
