// OpenNvmlPartitions (partition_backend.h): MIG instances created, listed and destroyed through
// NVML.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/nvml_api.h"
#include "kubeletplugin/discovery/internal/nvml_types.h"
#include "kubeletplugin/discovery/internal/partition_backends.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {
namespace {

namespace nv = ::xpu::discovery::nvml;

// MIG instances through NVML. The GPUs are enumerated once (handle, PCI address); every call after
// that asks the library as it is. A partition is a GPU instance with one compute instance spanning
// it (the full-size compute instance profile), as nvidia-smi mig -cgi <profile> -C makes.
class NvmlPartitions final : public PartitionBackend {
 public:
  ~NvmlPartitions() override {
    if (status_.loaded) api_.shutdown();
  }

  Status Open(const std::vector<std::string>& lib_dirs) {
    OpenNvml(lib_dirs, &lib_, &api_, &status_);
    if (!status_.loaded) return UnavailableError("nvml: " + status_.error);
    const std::vector<std::string> missing = BindNvmlMigManagement(lib_, &api_);
    if (!missing.empty() || !api_.has_mig()) {
      std::string names;
      for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
      return UnavailableError("nvml: " + status_.path + " cannot create MIG instances: it lacks " +
                              (names.empty() ? "the MIG listing calls" : names));
    }
    unsigned count = 0;
    if (nv::nvmlReturn_t rc = api_.device_get_count(&count); rc != nv::kSuccess) {
      return UnavailableError("nvml: " + NvmlCallError("nvmlDeviceGetCount_v2", rc));
    }
    for (unsigned i = 0; i < std::min(count, kNvmlMaxDevices); ++i) {
      Gpu gpu;
      gpu.index = i;
      if (api_.device_get_handle_by_index(i, &gpu.handle) != nv::kSuccess) continue;  // lost GPU
      nv::nvmlPciInfo_t pci{};
      if (api_.device_get_pci_info(gpu.handle, &pci) == nv::kSuccess) {
        gpu.pci_address = NormaliseBusId(pci.busId, sizeof pci.busId);
      }
      gpus_.push_back(std::move(gpu));
    }
    return OkStatus();
  }

  std::string kind() const override { return "mig"; }

  StatusOr<std::vector<LivePartition>> List(const PartitionParent& parent) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    ASSIGN_OR_RETURN(const NvmlMig mig, ReadMig(*gpu, parent));
    const std::map<unsigned, std::string> names = MigProfileNames(mig);
    std::vector<LivePartition> out;
    for (const NvmlGpuInstance& gi : mig.instances) {
      auto name = names.find(gi.profile_id);
      out.push_back(
          {name != names.end() ? name->second : "profile-" + std::to_string(gi.profile_id), gi.id,
           gi.placement.start, gi.uuid});
    }
    return out;
  }

  StatusOr<LivePartition> Create(const PartitionParent& parent, const std::string& profile,
                                 int64_t /*id*/, std::optional<int64_t> placement) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    ASSIGN_OR_RETURN(const NvmlMig mig, ReadMig(*gpu, parent));
    if (!mig.enabled) {
      return FailedPreconditionError(
          "nvml: " + parent.name +
          ": MIG mode is off; MIG mode is node configuration (nvidia-smi -mig 1, or the GPU "
          "operator's MIG manager) and is not switched at prepare");
    }
    const NvmlMigProfile* p = nullptr;
    for (const NvmlMigProfile& candidate : mig.profiles) {
      if (MigProfileName(candidate.name) == profile) p = &candidate;
    }
    if (p == nullptr) {
      return InvalidArgumentError("nvml: " + parent.name + ": no MIG profile \"" + profile + "\"");
    }
    const NvmlMigPlacement* at = nullptr;
    for (const NvmlMigPlacement& candidate : p->placements) {
      if (placement && candidate.start == *placement) at = &candidate;
    }
    if (at == nullptr) {
      return InvalidArgumentError("nvml: " + parent.name + ": MIG profile " + profile +
                                  " has no placement " +
                                  (placement ? std::to_string(*placement) : "(none given)"));
    }
    const std::string call = "nvmlDeviceCreateGpuInstanceWithPlacement(" + profile + " at " +
                             std::to_string(at->start) + ")";
    const nv::nvmlGpuInstancePlacement_t want{at->start, at->size};
    nv::nvmlGpuInstance_t gi = nullptr;
    nv::nvmlReturn_t rc =
        api_.device_create_gpu_instance_with_placement(gpu->handle, p->id, &want, &gi);
    if (rc != nv::kSuccess) return Error(parent, call, rc);
    nv::nvmlGpuInstanceInfo_t info{};
    if (rc = api_.gpu_instance_get_info(gi, &info); rc != nv::kSuccess) {
      return Undo(gi, Error(parent, "nvmlGpuInstanceGetInfo", rc));
    }
    // The compute instance spanning the whole GPU instance: the profile with its slices.
    std::optional<unsigned> ci_profile;
    for (unsigned index = 0; index < nv::kComputeInstanceProfileCount && !ci_profile; ++index) {
      nv::nvmlComputeInstanceProfileInfo_t ci{};
      if (api_.gpu_instance_get_compute_instance_profile_info(
              gi, index, nv::kComputeInstanceEngineProfileShared, &ci) == nv::kSuccess &&
          ci.sliceCount == p->slice_count) {
        ci_profile = ci.id;
      }
    }
    if (!ci_profile) {
      return Undo(gi, InternalError("nvml: " + parent.name + ": GPU instance " + profile +
                                    " has no compute instance profile of " +
                                    std::to_string(p->slice_count) + " slices"));
    }
    nv::nvmlComputeInstance_t ci = nullptr;
    if (rc = api_.gpu_instance_create_compute_instance(gi, *ci_profile, &ci); rc != nv::kSuccess) {
      return Undo(gi, Error(parent, "nvmlGpuInstanceCreateComputeInstance", rc));
    }
    // Its MIG device's UUID, as the listing reads it.
    LivePartition made{profile, info.id, at->start, ""};
    ASSIGN_OR_RETURN(const NvmlMig now, ReadMig(*gpu, parent));
    for (const NvmlGpuInstance& g : now.instances) {
      if (g.id == info.id) made.uuid = g.uuid;
    }
    return made;
  }

  Status Destroy(const PartitionParent& parent, int64_t id) override {
    ASSIGN_OR_RETURN(const Gpu* gpu, GpuOf(parent));
    const std::string what = "GPU instance " + std::to_string(id);
    nv::nvmlGpuInstance_t gi = nullptr;
    nv::nvmlReturn_t rc =
        id < 0 ? nv::kErrorNotFound
               : api_.device_get_gpu_instance_by_id(gpu->handle, static_cast<unsigned>(id), &gi);
    // An id no instance has (NVML answers NOT_FOUND or INVALID_ARGUMENT), or MIG mode off.
    if (rc == nv::kErrorNotFound || rc == nv::kErrorInvalidArgument ||
        rc == nv::kErrorNotSupported) {
      return NotFoundError("nvml: " + parent.name + ": no " + what);
    }
    if (rc != nv::kSuccess) return Error(parent, "nvmlDeviceGetGpuInstanceById(" + what + ")", rc);
    RETURN_IF_ERROR(DestroyComputeInstances(parent, gi));
    rc = api_.gpu_instance_destroy(gi);
    if (rc != nv::kSuccess) return Error(parent, "nvmlGpuInstanceDestroy(" + what + ")", rc);
    return OkStatus();
  }

 private:
  struct Gpu {
    unsigned index = 0;
    nv::nvmlDevice_t handle = nullptr;
    std::string pci_address;
  };

  StatusOr<const Gpu*> GpuOf(const PartitionParent& parent) const {
    for (const Gpu& g : gpus_) {
      const bool by_pci = !parent.pci_address.empty() && g.pci_address == parent.pci_address;
      const bool by_index = (parent.pci_address.empty() || g.pci_address.empty()) &&
                            static_cast<int64_t>(g.index) == parent.index;
      if (by_pci || by_index) return &g;
    }
    return NotFoundError("nvml: no GPU is device " + parent.name);
  }

  // What discovery reads of the GPU's MIG: modes, profiles, GPU instances and their UUIDs.
  StatusOr<NvmlMig> ReadMig(const Gpu& gpu, const PartitionParent& parent) const {
    NvmlDevice d;
    ReadNvmlMig(api_, gpu.handle, &d);
    if (!d.error.empty()) return UnavailableError("nvml: " + parent.name + ": " + d.error);
    if (!d.mig) return FailedPreconditionError("nvml: " + parent.name + " has no MIG");
    return *std::move(d.mig);
  }

  // Every compute instance of `gi`, of every profile it has.
  Status DestroyComputeInstances(const PartitionParent& parent, nv::nvmlGpuInstance_t gi) const {
    for (unsigned index = 0; index < nv::kComputeInstanceProfileCount; ++index) {
      nv::nvmlComputeInstanceProfileInfo_t profile{};
      if (api_.gpu_instance_get_compute_instance_profile_info(
              gi, index, nv::kComputeInstanceEngineProfileShared, &profile) != nv::kSuccess) {
        continue;  // not on this GPU instance
      }
      std::vector<nv::nvmlComputeInstance_t> cis(std::clamp(profile.instanceCount, 1U, 64U));
      auto count = static_cast<unsigned>(cis.size());
      nv::nvmlReturn_t rc =
          api_.gpu_instance_get_compute_instances(gi, profile.id, cis.data(), &count);
      if (rc != nv::kSuccess) return Error(parent, "nvmlGpuInstanceGetComputeInstances", rc);
      for (unsigned i = 0; i < std::min<size_t>(count, cis.size()); ++i) {
        if (rc = api_.compute_instance_destroy(cis[i]); rc != nv::kSuccess) {
          return Error(parent, "nvmlComputeInstanceDestroy", rc);
        }
      }
    }
    return OkStatus();
  }

  // A half-made partition taken back (its GPU instance destroyed), and `error` returned.
  Status Undo(nv::nvmlGpuInstance_t gi, Status error) const {
    if (api_.gpu_instance_destroy(gi) != nv::kSuccess) {
      return error.WithContext("(its GPU instance could not be destroyed; reconciliation will)");
    }
    return error;
  }

  static Status Error(const PartitionParent& parent, const std::string& call, nv::nvmlReturn_t rc) {
    return internal::PartitionCallError(
        "nvml: " + parent.name + ": " + NvmlCallError(call, rc),
        rc == nv::kErrorInsufficientResources || rc == nv::kErrorInUse);
  }

  std::vector<Gpu> gpus_;  // the GPUs NVML lists, by index
  LibraryStatus status_;
  DlLibrary lib_;
  NvmlApi api_;
};

}  // namespace

StatusOr<std::unique_ptr<PartitionBackend>> OpenNvmlPartitions(
    const std::vector<std::string>& lib_dirs) {
  return internal::OpenPartitionBackend<NvmlPartitions>(lib_dirs);
}

}  // namespace xpu::discovery
