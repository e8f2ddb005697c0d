// The plugin's record of prepared claims (docs/architecture.md "State and crashes"): versioned,
// checksummed, written atomically (temp file, fsync, rename, fsync of the directory), mode 0600,
// with the boot id of the node when it was written. A missing file is an empty checkpoint; a
// corrupt or unknown-version file is a data-loss error (the plugin refuses to serve rather than
// forget claims). A claim is recorded once its CDI spec is written (compute, then act), so every
// entry is a prepared claim.
#ifndef XPU_KUBELETPLUGIN_CHECKPOINT_CHECKPOINT_H_
#define XPU_KUBELETPLUGIN_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xpu::checkpoint {

struct Device {
  std::vector<std::string> request_names;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;
  std::string share_id;
  // A group device (the `groups` publishing mode): the devices it stands for; empty otherwise.
  std::vector<std::string> members;
  friend bool operator==(const Device&, const Device&) = default;
};

struct Claim {
  std::string uid;
  std::string ns;
  std::string name;
  std::vector<Device> devices;
  // The CDI spec's JSON as written, so that it can be rewritten after a reboot (the CDI
  // directory is tmpfs on most nodes) without the claim or the inventory.
  std::string cdi_spec;
  friend bool operator==(const Claim&, const Claim&) = default;
};

// A partition of a device (vNPU, MIG) the plugin handed to a claim (docs/partitions.md). One it
// creates is recorded before the vendor call (kCreating, with the vendor id it asks for), completed
// after it (kCreated) and marked before it is destroyed (kDestroying), so that a crash at any step
// leaves enough on disk to find the partition again: nothing is created twice and nothing is left
// behind. One that existed before the claim is recorded kStatic and never destroyed.
struct Partition {
  std::string claim_uid;
  std::string device;  // the published name, "npu-1-vir05-1c-16g-2"
  std::string parent;  // the parent's inventory name, "npu-1"
  std::string kind;    // "vnpu", "mig"
  std::string profile;
  int64_t placement = -1;  // MIG: the first slot; -1 for none
  int64_t instance = 0;    // placement-less profiles: the instance number
  int64_t id = -1;         // the vendor's id (the vdev id); -1 while unknown
  std::string uuid;        // the vendor's uuid where it has one
  std::string state;
  // While Creating with no id (the vendor picks it and the profile has no placement: vHCU), the
  // ids already on the parent: the new partition is the one of this profile not among them.
  std::vector<int64_t> ids_before;
  friend bool operator==(const Partition&, const Partition&) = default;
};

inline constexpr std::string_view kPartitionCreating = "Creating";
inline constexpr std::string_view kPartitionCreated = "Created";
inline constexpr std::string_view kPartitionDestroying = "Destroying";
inline constexpr std::string_view kPartitionStatic = "Static";

struct Checkpoint {
  std::string boot_id;
  std::map<std::string, Claim> claims;  // by uid
  std::vector<Partition> partitions;    // omitted from the file while empty
  friend bool operator==(const Checkpoint&, const Checkpoint&) = default;
};

inline constexpr int kCheckpointVersion = 1;

// CRC-32C (Castagnoli, reflected, as iSCSI and ext4 use it): Crc32c("123456789") == 0xe3069283.
uint32_t Crc32c(std::string_view bytes);

// JSON: {"version":1,"checksum":"<crc32c of data, 8 hex>","data":{...}}. The checksum covers the
// canonical serialisation of "data": compact, object keys sorted (nlohmann::json's dump()).
std::string Encode(const Checkpoint& cp);
// DataLoss with "read checkpoint <what>: <cause>" for a bad checksum, a bad version or bad JSON.
StatusOr<Checkpoint> Decode(const std::string& text, const std::string& what);

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string path);  // "<state-dir>/checkpoint.json"
  // NotFound never: a missing file gives an empty checkpoint. An unreadable file is an error
  // with the OS cause; a corrupt one DataLoss (Decode).
  StatusOr<Checkpoint> Load() const;
  // Creates the directory (mode 0700, parents too) when missing, then writes "<path>.tmp" with
  // mode 0600, fsync, rename over `path`, fsync of the directory. Thread-compatible.
  Status Save(const Checkpoint& cp);
  const std::string& path() const { return path_; }
  uint64_t writes() const { return writes_; }

 private:
  std::string path_;
  uint64_t writes_ = 0;
};

}  // namespace xpu::checkpoint

#endif  // XPU_KUBELETPLUGIN_CHECKPOINT_CHECKPOINT_H_
