// ProbeDcmi: Huawei DCMI through dlopen. Chips are enumerated card by card; a failing call is
// recorded on its chip and the probe moves on.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "base/text.h"
#include "kubeletplugin/discovery/internal/call_log.h"
#include "kubeletplugin/discovery/internal/dcmi_types.h"
#include "kubeletplugin/discovery/internal/dl_library.h"
#include "kubeletplugin/discovery/internal/partition_backends.h"
#include "kubeletplugin/discovery/partition_backend.h"
#include "kubeletplugin/discovery/telemetry.h"
#include "kubeletplugin/discovery/vendor_libs.h"

namespace xpu::discovery {
namespace {

namespace dc = ::xpu::discovery::dcmi;

constexpr const char* kDcmiFile = "libdcmi.so";
constexpr int kMaxDevicesPerCard = 8;  // A3 has 2 NPUs (+ the MCU, not counted); guards garbage
constexpr uint32_t kHealthAbsent = 0xFFFFFFFF;

std::string_view DcmiErrorName(int rc) {
  static constexpr CodeName kNames[] = {
      {0, "ok"},
      {-8001, "invalid parameter"},
      {-8002, "operation not permitted"},
      {-8003, "memory operation failed"},
      {-8004, "secure function failed"},
      {-8005, "inner error"},
      {-8006, "timeout"},
      {-8007, "invalid device id"},
      {-8008, "device does not exist"},
      {-8009, "ioctl failed"},
      {-8010, "send message failed"},
      {-8011, "receive message failed"},
      {-8012, "not ready"},
      {-8013, "not supported in container"},
      {-8014, "file operation failed"},
      {-8015, "reset failed"},
      {-8016, "operation aborted"},
      {-8017, "upgrading"},
      {-8020, "resource occupied"},
      {-8022, "partition not right"},
      {-8255, "not supported"},
  };
  return NameOf(kNames, rc).value_or("unknown error");
}

std::string DcmiCallError(std::string_view fn, int rc) {
  std::string out(fn);
  out += ": " + std::to_string(rc) + " ";
  out += DcmiErrorName(rc);
  return out;
}

template <size_t N>
std::string CString(const unsigned char (&buf)[N]) {
  const char* p = reinterpret_cast<const char*>(buf);  // NOLINT(google-readability-casting)
  return std::string(p, strnlen(p, N));
}

std::string NetworkHealthName(int result) {
  static constexpr std::string_view kNames[] = {
      "ok",    "socket-failure", "receive-timeout", "unreachable", "time-exceeded",
      "fault", "initialising",   "thread-error",    "ip-not-set",
  };
  static_assert(NamesCover(kNames, dc::kDetectIpSet));  // dc::kDetect* in value order
  if (auto name = NameAt(kNames, result)) return std::string(*name);
  return "unknown-" + std::to_string(result);
}

std::string TopoTypeName(int type) {
  static constexpr std::string_view kNames[] = {"self", "sys", "phb",     "hccs", "pxb",
                                                "pix",  "sio", "hccs-sw", "ub"};
  static_assert(NamesCover(kNames, dc::kTopoUb));         // dc::kTopo* in value order
  return std::string(NameAt(kNames, type).value_or(""));  // "": BUTT, the library does not know
}

struct DcmiApi {
  // Required: enumeration and identity, in every DCMI since the 910 (A1) drivers.
  dc::InitFn init = nullptr;
  dc::GetCardListFn get_card_list = nullptr;
  dc::GetDeviceNumInCardFn get_device_num_in_card = nullptr;
  dc::GetDeviceLogicIdFn get_device_logic_id = nullptr;
  dc::GetPhyIdFromLogicIdFn get_device_phyid_from_logicid = nullptr;
  dc::GetChipInfoFn get_device_chip_info = nullptr;
  // Optional.
  dc::GetVersionFn get_dcmi_version = nullptr;
  dc::GetVersionFn get_driver_version = nullptr;
  dc::GetProductTypeFn get_product_type = nullptr;
  dc::GetPcieInfoFn get_device_pcie_info_v2 = nullptr;
  dc::GetHbmInfoFn get_device_hbm_info = nullptr;
  dc::GetHealthFn get_device_health = nullptr;
  dc::GetDeviceIpFn get_device_ip = nullptr;
  dc::GetTopoInfoFn get_topo_info_by_device_id = nullptr;
  dc::GetNetworkHealthFn get_device_network_health = nullptr;
  dc::GetDeviceInfoFn get_device_info = nullptr;
  dc::GetComponentVersionFn get_device_component_static_version = nullptr;
  // Partitions only (BindPartitions): optional, never part of the discovery probe's status.
  dc::CreateVdeviceFn create_vdevice = nullptr;
  dc::DestroyVdeviceFn set_destroy_vdevice = nullptr;
  // Telemetry only (BindTelemetry): optional, never part of the discovery probe's status.
  dc::GetTemperatureFn get_device_temperature = nullptr;
  dc::GetPowerInfoFn get_device_power_info = nullptr;
  dc::GetUtilizationRateFn get_device_utilization_rate = nullptr;
  dc::GetEccInfoFn get_device_ecc_info = nullptr;
};

std::vector<std::string> Bind(const DlLibrary& lib, DcmiApi* api,
                              std::vector<std::string>* optional_missing) {
  std::vector<std::string> required_missing;
  auto* req = &required_missing;
  lib.Bind("dcmi_init", &api->init, req);
  lib.Bind("dcmi_get_card_list", &api->get_card_list, req);
  lib.Bind("dcmi_get_device_num_in_card", &api->get_device_num_in_card, req);
  lib.Bind("dcmi_get_device_logic_id", &api->get_device_logic_id, req);
  lib.Bind("dcmi_get_device_phyid_from_logicid", &api->get_device_phyid_from_logicid, req);
  lib.Bind("dcmi_get_device_chip_info", &api->get_device_chip_info, req);
  auto* opt = optional_missing;
  lib.Bind("dcmi_get_dcmi_version", &api->get_dcmi_version, opt);
  lib.Bind("dcmi_get_driver_version", &api->get_driver_version, opt);
  lib.Bind("dcmi_get_product_type", &api->get_product_type, opt);
  lib.Bind("dcmi_get_device_pcie_info_v2", &api->get_device_pcie_info_v2, opt);
  lib.Bind("dcmi_get_device_hbm_info", &api->get_device_hbm_info, opt);
  lib.Bind("dcmi_get_device_health", &api->get_device_health, opt);
  lib.Bind("dcmi_get_device_ip", &api->get_device_ip, opt);
  lib.Bind("dcmi_get_topo_info_by_device_id", &api->get_topo_info_by_device_id, opt);
  lib.Bind("dcmi_get_device_network_health", &api->get_device_network_health, opt);
  lib.Bind("dcmi_get_device_info", &api->get_device_info, opt);
  lib.Bind("dcmi_get_device_component_static_version", &api->get_device_component_static_version,
           opt);
  return required_missing;
}

void BindTelemetry(const DlLibrary& lib, DcmiApi* api, std::vector<std::string>* missing) {
  lib.Bind("dcmi_get_device_temperature", &api->get_device_temperature, missing);
  lib.Bind("dcmi_get_device_power_info", &api->get_device_power_info, missing);
  lib.Bind("dcmi_get_device_utilization_rate", &api->get_device_utilization_rate, missing);
  lib.Bind("dcmi_get_device_ecc_info", &api->get_device_ecc_info, missing);
}

// dcmi_get_device_info(HCCS, GET_STATUS), shared by the probe and the telemetry.
int ReadHccsStatus(const DcmiApi& api, int card, int device, dc::dcmi_hccs_statues* st) {
  unsigned size = sizeof *st;
  return api.get_device_info(card, device, dc::kMainCmdHccs, dc::kHccsCmdGetStatus, st, &size);
}

// dcmi_get_device_info(VDEV_MNG): GET_TOTAL_RESOURCE, then GET_VDEV_RESOURCE for each vdevice.
// Returns the first failing call's code, with its name in `failed`.
int ReadVnpu(const DcmiApi& api, int card, int dev, DcmiVnpu* out, std::string* failed) {
  dc::dcmi_soc_total_resource total{};
  unsigned size = sizeof total;
  *failed = "dcmi_get_device_info(VDEV_MNG, GET_TOTAL_RESOURCE)";
  int rc = api.get_device_info(card, dev, dc::kMainCmdVdevMng, dc::kVmngSubCmdGetTotalResource,
                               &total, &size);
  if (rc != dc::kOk) return rc;
  out->aicore = total.computing.aic;
  out->aicpu = total.computing.device_aicpu;
  out->memory_mb = total.computing.memory_size;
  const unsigned count = std::min<unsigned>(total.vdev_num, dc::kSocSplitMax);
  *failed = "dcmi_get_device_info(VDEV_MNG, GET_VDEV_RESOURCE)";
  for (unsigned i = 0; i < count; ++i) {
    dc::dcmi_vdev_query_stru query{};
    query.vdev_id = total.vdev_id[i];
    size = sizeof query;
    rc = api.get_device_info(card, dev, dc::kMainCmdVdevMng, dc::kVmngSubCmdGetVdevResource, &query,
                             &size);
    if (rc != dc::kOk) return rc;
    const dc::dcmi_vdev_query_info& info = query.query_info;
    DcmiVdevice& v = out->vdevices.emplace_back();
    v.id = query.vdev_id;
    v.group = info.vfg_id;
    v.name = BoundedCString(info.name, sizeof info.name);
    v.aicore = info.computing.aic;
    v.aicpu = info.computing.device_aicpu;
    v.memory_mb = info.computing.memory_size;
    v.in_use = info.is_container_used != 0;
  }
  std::sort(out->vdevices.begin(), out->vdevices.end(),
            [](const DcmiVdevice& a, const DcmiVdevice& b) { return a.id < b.id; });
  failed->clear();
  return dc::kOk;
}

class ChipProbe {
 public:
  ChipProbe(const DcmiApi& api, DcmiChip* out)
      : api_(api), out_(out), log_(&out->error, dc::kOk, dc::kErrDeviceNotExist, DcmiCallError) {}

  // Returns false when the logic id could not be read: the chip then has no topology.
  bool Run() {
    const int card = out_->card_id, dev = out_->device_id;
    int logic = 0;
    if (!Ok("dcmi_get_device_logic_id", api_.get_device_logic_id(&logic, card, dev))) return false;
    out_->logic_id = logic;
    unsigned phy = 0;
    int rc = api_.get_device_phyid_from_logicid(static_cast<unsigned>(logic), &phy);
    if (!Ok("dcmi_get_device_phyid_from_logicid", rc) && log_.gone()) return false;
    if (rc == dc::kOk) out_->phy_id = static_cast<int>(phy);
    dc::dcmi_chip_info chip{};
    if (Ok("dcmi_get_device_chip_info", api_.get_device_chip_info(card, dev, &chip))) {
      out_->chip_type = CString(chip.chip_type);
      out_->chip_name = CString(chip.chip_name);
      out_->chip_ver = CString(chip.chip_ver);
      out_->aicore_count = static_cast<int>(chip.aicore_cnt);
    }
    if (log_.gone()) return true;
    if (api_.get_device_pcie_info_v2 != nullptr) {
      dc::dcmi_pcie_info_all pcie{};
      rc = api_.get_device_pcie_info_v2(card, dev, &pcie);
      // Not supported (SoC boards): the chip is then matched by its physical id.
      if (rc != dc::kErrNotSupport && Ok("dcmi_get_device_pcie_info_v2", rc)) {
        char bdf[32];
        std::snprintf(bdf, sizeof bdf, "%04x:%02x:%02x.%x", static_cast<unsigned>(pcie.domain),
                      pcie.bdf_busid, pcie.bdf_deviceid, pcie.bdf_funcid);
        out_->pci_bus_id = bdf;
      }
    }
    if (log_.gone()) return true;
    if (api_.get_device_hbm_info != nullptr) {
      dc::dcmi_hbm_info hbm{};
      if (Ok("dcmi_get_device_hbm_info", api_.get_device_hbm_info(card, dev, &hbm))) {
        out_->hbm_total_mb = hbm.memory_size;
      }
    }
    if (log_.gone()) return true;
    if (api_.get_device_health != nullptr) {
      unsigned health = 0;
      if (Ok("dcmi_get_device_health", api_.get_device_health(card, dev, &health))) {
        out_->health = health;
      }
    }
    if (log_.gone()) return true;
    if (api_.get_device_ip != nullptr) DeviceIp();
    if (log_.gone()) return true;
    if (api_.get_device_network_health != nullptr) NetworkHealth();
    if (log_.gone()) return true;
    if (api_.get_device_info != nullptr) HccsStatus();
    if (log_.gone()) return true;
    if (api_.get_device_info != nullptr) Vnpu();
    if (log_.gone()) return true;
    if (api_.get_device_component_static_version != nullptr) Firmware();
    return true;
  }

 private:
  // Records a failure; false when the caller should stop (the call failed). A chip that is gone
  // has the health "absent".
  bool Ok(std::string_view fn, int rc) {
    if (log_.Ok(fn, rc)) return true;
    if (log_.gone()) out_->health = kHealthAbsent;
    return false;
  }

  // The RoCE port's address; PCIe cards without one answer "not supported", which is no error.
  void DeviceIp() {
    dc::dcmi_ip_addr ip{};
    dc::dcmi_ip_addr mask{};
    int rc = api_.get_device_ip(out_->card_id, out_->device_id, dc::DCMI_ROCE_PORT, 0, &ip, &mask);
    if (rc == dc::kErrNotSupport) return;
    if (!Ok("dcmi_get_device_ip", rc)) return;
    char text[INET6_ADDRSTRLEN] = {};
    bool v6 = ip.ip_type == dc::DCMI_IPADDR_TYPE_V6;
    if (inet_ntop(
            v6 ? AF_INET6 : AF_INET,
            v6 ? static_cast<const void*>(ip.u_addr.ip6) : static_cast<const void*>(ip.u_addr.ip4),
            text, sizeof text) != nullptr) {
      out_->device_ip = text;
    }
  }

  // Cards without a RoCE port (PCIe cards, the 910B 300I A2) answer "not supported": no error.
  void NetworkHealth() {
    int result = dc::kDetectOk;
    int rc = api_.get_device_network_health(out_->card_id, out_->device_id, &result);
    if (rc == dc::kErrNotSupport) return;
    if (Ok("dcmi_get_device_network_health", rc)) out_->network_health = NetworkHealthName(result);
  }

  // "For PCIe inference and training hardware, HCCS is not supported" (docs/reference/hardware.md
  // §1.6).
  void HccsStatus() {
    dc::dcmi_hccs_statues st{};
    int rc = ReadHccsStatus(api_, out_->card_id, out_->device_id, &st);
    if (rc == dc::kErrNotSupport) return;
    if (!Ok("dcmi_get_device_info(HCCS, GET_STATUS)", rc)) return;
    out_->hccs_pcs_status = st.pcs_status;
    out_->hccs_hdlc_status = st.hdlc_status;
    out_->hccs_healthy = st.pcs_status == 0 && st.hdlc_status == dc::kHdlcStatusOk;
  }

  // The chip's whole resource and its vdevices. NOT_SUPPORT: no virtualisation, no error.
  void Vnpu() {
    DcmiVnpu vnpu;
    std::string failed;
    const int rc = ReadVnpu(api_, out_->card_id, out_->device_id, &vnpu, &failed);
    if (rc == dc::kErrNotSupport && failed.ends_with("GET_TOTAL_RESOURCE)")) return;
    if (Ok(failed, rc)) out_->vnpu = std::move(vnpu);
  }

  // The component npu-smi shows as the chip's firmware: IMU on the 910, HILINK on later chips.
  void Firmware() {
    const bool is_910a = out_->chip_name.starts_with("910") &&
                         !out_->chip_name.starts_with("910B") &&
                         !out_->chip_name.starts_with("910_93");
    unsigned char version[dc::kMaxVerLen + 1] = {};
    int rc = api_.get_device_component_static_version(
        out_->card_id, out_->device_id, is_910a ? dc::kComponentImu : dc::kComponentHilink, version,
        dc::kMaxVerLen);
    if (rc == dc::kErrNotSupport) return;
    if (!Ok("dcmi_get_device_component_static_version", rc)) return;
    out_->firmware_version = CString(version);
  }

  const DcmiApi& api_;
  DcmiChip* out_;
  CallLog<int> log_;
};

// Loads, binds and initialises the library into `lib` and `api`; sets status.loaded on success.
void OpenDcmi(const std::vector<std::string>& lib_dirs, DlLibrary* lib, DcmiApi* api,
              LibraryStatus* status) {
  OpenVendorLibrary(
      "dcmi", kDcmiFile, lib_dirs, lib, api, status,
      [](const DlLibrary& l, DcmiApi* a, std::vector<std::string>* missing) {
        return Bind(l, a, missing);
      },
      [](DcmiApi* a) -> std::string {
        const int rc = a->init();
        return rc == dc::kOk ? "" : DcmiCallError("dcmi_init", rc);
      });
}

// Every chip, card by card, probed; `present[i]`: chip i's logic id is known. The first failing
// library-wide call goes to status->error.
std::vector<DcmiChip> EnumerateChips(const DcmiApi& api, LibraryStatus* status,
                                     std::vector<bool>* present) {
  auto library_error = [&](std::string_view fn, int rc) {
    if (status->error.empty()) status->error = DcmiCallError(fn, rc);
  };
  std::vector<DcmiChip> chips;
  int card_count = 0;
  int cards[dc::kMaxCardNum] = {};
  if (int rc = api.get_card_list(&card_count, cards, dc::kMaxCardNum); rc != dc::kOk) {
    library_error("dcmi_get_card_list", rc);
    card_count = 0;
  }
  card_count = std::clamp(card_count, 0, dc::kMaxCardNum);
  for (int c = 0; c < card_count; ++c) {
    int devices = 0;
    if (int rc = api.get_device_num_in_card(cards[c], &devices); rc != dc::kOk) {
      library_error("dcmi_get_device_num_in_card", rc);
      continue;
    }
    devices = std::clamp(devices, 0, kMaxDevicesPerCard);
    for (int d = 0; d < devices; ++d) {
      DcmiChip& chip = chips.emplace_back();
      chip.card_id = cards[c];
      chip.device_id = d;
      present->push_back(ChipProbe(api, &chip).Run());
    }
  }
  return chips;
}

// The facts of a loaded DCMI: versions, the chips, the product type and the topology.
void ReadDcmiFacts(const DcmiApi& api, DcmiFacts& facts) {
  LibraryStatus& status = facts.library;
  auto library_error = [&](std::string_view fn, int rc) {
    if (status.error.empty()) status.error = DcmiCallError(fn, rc);
  };

  char version[dc::kMaxVerLen + 1] = {};
  if (api.get_dcmi_version != nullptr) {
    if (int rc = api.get_dcmi_version(version, sizeof version); rc == dc::kOk) {
      facts.dcmi_version = BoundedCString(version, sizeof version);
    } else {
      library_error("dcmi_get_dcmi_version", rc);
    }
  }
  if (api.get_driver_version != nullptr) {
    std::memset(version, 0, sizeof version);
    if (int rc = api.get_driver_version(version, sizeof version); rc == dc::kOk) {
      facts.driver_version = BoundedCString(version, sizeof version);
    } else {
      library_error("dcmi_get_driver_version", rc);
    }
  }

  std::vector<bool> present;  // per chip: logic id known
  facts.chips = EnumerateChips(api, &status, &present);

  // Product type is per system, read through the first chip that answers.
  if (api.get_product_type != nullptr) {
    for (const DcmiChip& chip : facts.chips) {
      char product[dc::kProductTypeLen] = {};
      if (api.get_product_type(chip.card_id, chip.device_id, product, sizeof product) == dc::kOk) {
        facts.product_type = BoundedCString(product, sizeof product);
        break;
      }
    }
  }

  if (api.get_topo_info_by_device_id != nullptr) {
    for (size_t i = 0; i < facts.chips.size(); ++i) {
      for (size_t j = 0; j < facts.chips.size(); ++j) {
        const DcmiChip& a = facts.chips[i];
        const DcmiChip& b = facts.chips[j];
        if (!present[i] || !present[j] || a.logic_id >= b.logic_id) continue;
        int type = -1;
        if (api.get_topo_info_by_device_id(a.card_id, a.device_id, b.card_id, b.device_id, &type) !=
            dc::kOk) {
          continue;
        }
        std::string name = TopoTypeName(type);
        if (!name.empty()) facts.topology.push_back({a.logic_id, b.logic_id, std::move(name)});
      }
    }
    std::sort(facts.topology.begin(), facts.topology.end(),
              [](const DcmiTopology& x, const DcmiTopology& y) {
                return x.a != y.a ? x.a < y.a : x.b < y.b;
              });
  }
}

}  // namespace

DcmiFacts ProbeDcmi(const std::vector<std::string>& lib_dirs) {
  return ProbeLibrary<DcmiFacts, DcmiApi>(lib_dirs, OpenDcmi, ReadDcmiFacts);
}

namespace {

// Telemetry from a library kept initialised: the chips are enumerated once (card and device ids,
// PCI address); each Sample() reads the counters.
class DcmiTelemetry final : public TelemetrySource {
 public:
  explicit DcmiTelemetry(const std::vector<std::string>& lib_dirs) {
    OpenDcmi(lib_dirs, &lib_, &api_, &status_);
    if (!status_.loaded) return;
    BindTelemetry(lib_, &api_, &status_.missing_symbols);
    std::vector<bool> present;
    for (DcmiChip& chip : EnumerateChips(api_, &status_, &present)) {
      if (!chip.pci_bus_id.empty()) chips_.push_back(std::move(chip));  // else cannot be joined
    }
  }

  const LibraryStatus& status() const override { return status_; }

  std::vector<DeviceTelemetry> Sample() override {
    std::vector<DeviceTelemetry> out;
    out.reserve(chips_.size());
    for (const DcmiChip& chip : chips_) out.push_back(Read(chip));
    return out;
  }

 private:
  DeviceTelemetry Read(const DcmiChip& chip) const {
    DeviceTelemetry t;
    t.pci_address = chip.pci_bus_id;
    const int card = chip.card_id, dev = chip.device_id;
    // Not supported (a PCIe card without HCCS or RoCE, ECC off) is an answer, not an error.
    auto ok = [&t](std::string_view fn, int rc) {
      if (rc != dc::kOk && rc != dc::kErrNotSupport) AddTelemetryError(&t, DcmiCallError(fn, rc));
      return rc == dc::kOk;
    };
    if (int celsius = 0;
        api_.get_device_temperature != nullptr &&
        ok("dcmi_get_device_temperature", api_.get_device_temperature(card, dev, &celsius))) {
      t.temperature_celsius = celsius;
    }
    if (int deciwatts = 0;
        api_.get_device_power_info != nullptr &&
        ok("dcmi_get_device_power_info", api_.get_device_power_info(card, dev, &deciwatts))) {
      t.power_watts = deciwatts / 10.0;
    }
    if (unsigned percent = 0;
        api_.get_device_utilization_rate != nullptr &&
        ok("dcmi_get_device_utilization_rate",
           api_.get_device_utilization_rate(card, dev, dc::kUtilizationAiCore, &percent))) {
      t.utilization_ratio = percent / 100.0;
    }
    constexpr double kMiB = 1024.0 * 1024.0;
    if (dc::dcmi_hbm_info hbm{};
        api_.get_device_hbm_info != nullptr &&
        ok("dcmi_get_device_hbm_info", api_.get_device_hbm_info(card, dev, &hbm))) {
      t.memory_used_bytes = static_cast<double>(hbm.memory_usage) * kMiB;
      t.memory_total_bytes = static_cast<double>(hbm.memory_size) * kMiB;
    }
    if (dc::dcmi_ecc_info ecc{};
        api_.get_device_ecc_info != nullptr &&
        ok("dcmi_get_device_ecc_info",
           api_.get_device_ecc_info(card, dev, dc::kDeviceTypeHbm, &ecc))) {
      t.ecc_errors["corrected"] = ecc.single_bit_error_cnt;
      t.ecc_errors["uncorrected"] = ecc.double_bit_error_cnt;
    }
    if (api_.get_device_info != nullptr) {
      dc::dcmi_hccs_statues st{};
      if (ok("dcmi_get_device_info(HCCS, GET_STATUS)", ReadHccsStatus(api_, card, dev, &st))) {
        t.links_up["hccs"] = st.pcs_status == 0 && st.hdlc_status == dc::kHdlcStatusOk ? 1 : 0;
        HccsErrors(card, dev, &t, ok);
      }
    }
    if (int result = dc::kDetectOk;
        api_.get_device_network_health != nullptr &&
        ok("dcmi_get_device_network_health", api_.get_device_network_health(card, dev, &result))) {
      t.links_up["roce"] = result == dc::kDetectOk ? 1 : 0;
    }
    return t;
  }

  // The CRC error and retry counts of HCCS macros 1-7 (only asked where GET_STATUS answered: a
  // PCIe card has no HCCS).
  template <typename Ok>
  void HccsErrors(int card, int dev, DeviceTelemetry* t, const Ok& ok) const {
    dc::dcmi_hccs_statistic_info_u64 stats{};
    unsigned size = sizeof stats;
    if (!ok("dcmi_get_device_info(HCCS, GET_STATISTIC_INFO_U64)",
            api_.get_device_info(card, dev, dc::kMainCmdHccs, dc::kHccsCmdGetStatisticInfoU64,
                                 &stats, &size))) {
      return;
    }
    for (int pcs = dc::kHccsFirstPcs; pcs <= dc::kHccsLastPcs; ++pcs) {
      const std::string link = "hccs" + std::to_string(pcs);
      t->link_errors[{link, "crc"}] = static_cast<double>(stats.crc_err_cnt[pcs]);
      t->link_errors[{link, "retry"}] = static_cast<double>(stats.retry_cnt[pcs]);
    }
  }

  LibraryStatus status_;
  DlLibrary lib_;
  DcmiApi api_;
  std::vector<DcmiChip> chips_;
};

}  // namespace

std::unique_ptr<TelemetrySource> OpenDcmiTelemetry(const std::vector<std::string>& lib_dirs) {
  return std::make_unique<DcmiTelemetry>(lib_dirs);
}

namespace {

// vNPUs through DCMI. The chips are enumerated once, to find a parent's card and device ids by
// its PCI address (or physical id); every call after that goes to the library as it is.
class DcmiPartitions final : public PartitionBackend {
 public:
  Status Open(const std::vector<std::string>& lib_dirs) {
    OpenDcmi(lib_dirs, &lib_, &api_, &status_);
    if (!status_.loaded) return UnavailableError("dcmi: " + status_.error);
    std::vector<std::string> missing;
    lib_.Bind("dcmi_create_vdevice", &api_.create_vdevice, &missing);
    lib_.Bind("dcmi_set_destroy_vdevice", &api_.set_destroy_vdevice, &missing);
    if (!missing.empty() || api_.get_device_info == nullptr) {
      return UnavailableError("dcmi: " + status_.path +
                              " cannot create vNPUs: it lacks dcmi_create_vdevice, "
                              "dcmi_set_destroy_vdevice or dcmi_get_device_info");
    }
    std::vector<bool> present;
    chips_ = EnumerateChips(api_, &status_, &present);
    return OkStatus();
  }

  std::string kind() const override { return "vnpu"; }

  StatusOr<std::vector<LivePartition>> List(const PartitionParent& parent) override {
    ASSIGN_OR_RETURN(const DcmiChip* chip, ChipOf(parent));
    DcmiVnpu vnpu;
    std::string failed;
    if (const int rc = ReadVnpu(api_, chip->card_id, chip->device_id, &vnpu, &failed);
        rc != dc::kOk) {
      return Error(parent, failed, rc);
    }
    std::vector<LivePartition> out;
    for (const DcmiVdevice& v : vnpu.vdevices) out.push_back({v.name, v.id, std::nullopt, ""});
    return out;
  }

  StatusOr<LivePartition> Create(const PartitionParent& parent, const std::string& profile,
                                 int64_t id, std::optional<int64_t> /*placement*/) override {
    ASSIGN_OR_RETURN(const DcmiChip* chip, ChipOf(parent));
    dc::dcmi_create_vdev_res_stru in{};
    if (profile.empty() || profile.size() >= sizeof in.template_name) {
      return InvalidArgumentError("vNPU template \"" + profile + "\" is not a template name");
    }
    in.vdev_id = id < 0 ? dc::kVdevIdAuto : static_cast<unsigned>(id);
    in.vfg_id = dc::kVdevIdAuto;
    std::memcpy(in.template_name, profile.data(), profile.size());
    dc::dcmi_create_vdev_out out{};
    const int rc = api_.create_vdevice(chip->card_id, chip->device_id, &in, &out);
    if (rc != dc::kOk) return Error(parent, "dcmi_create_vdevice(" + profile + ")", rc);
    return LivePartition{profile, static_cast<int64_t>(out.vdev_id), std::nullopt, ""};
  }

  Status Destroy(const PartitionParent& parent, int64_t id) override {
    ASSIGN_OR_RETURN(const DcmiChip* chip, ChipOf(parent));
    const int rc =
        api_.set_destroy_vdevice(chip->card_id, chip->device_id, static_cast<unsigned>(id));
    if (rc == dc::kOk) return OkStatus();
    const Status error = Error(parent, "dcmi_set_destroy_vdevice(" + std::to_string(id) + ")", rc);
    // The library answers an unknown vdev id as an invalid parameter.
    return rc == dc::kErrInvalidParameter ? NotFoundError(error.message()) : error;
  }

 private:
  StatusOr<const DcmiChip*> ChipOf(const PartitionParent& parent) const {
    for (const DcmiChip& c : chips_) {
      const bool by_pci = !parent.pci_address.empty() && c.pci_bus_id == parent.pci_address;
      const bool by_index =
          (parent.pci_address.empty() || c.pci_bus_id.empty()) && c.phy_id == parent.index;
      if (by_pci || by_index) return &c;
    }
    return NotFoundError("dcmi: no chip is device " + parent.name);
  }

  static Status Error(const PartitionParent& parent, const std::string& call, int rc) {
    return internal::PartitionCallError(
        "dcmi: " + parent.name + ": " + DcmiCallError(call, rc),
        rc == dc::kErrResourceOccupied || rc == dc::kErrTimeOut || rc == dc::kErrNotReady);
  }

  LibraryStatus status_;
  DlLibrary lib_;
  DcmiApi api_;
  std::vector<DcmiChip> chips_;
};

}  // namespace

StatusOr<std::unique_ptr<PartitionBackend>> OpenDcmiPartitions(
    const std::vector<std::string>& lib_dirs) {
  return internal::OpenPartitionBackend<DcmiPartitions>(lib_dirs);
}

}  // namespace xpu::discovery
