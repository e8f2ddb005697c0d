// A fake libdcmi.so for tests: the DCMI functions ProbeDcmi calls (and a few neighbours), with
// DCMI's signatures and return codes, answering from the fixture JSON named by $XPU_FAKE_DCMI_JSON
// (e2e/fixtures/hosts/README.md, "fake-vendor/dcmi.json"), re-read on every dcmi_init. Faults
// honoured, all by logic id: `init` (dcmi_init fails with that code), `deviceGone` (every call for
// the chip answers -8008 DEVICE_NOT_EXIST), `unhealthy` (dcmi_get_device_health answers 2, major,
// unless the fixture gives a worse value), `linkDown` (dcmi_get_device_network_health answers
// DETECT_UNREACH), `hccsDown` (the HCCS status of the chip reads pcs_status 1, hdlc_status 0),
// `callErrors` (that function answers that code for that chip). Telemetry (temperature, power,
// AI Core utilisation, HBM ECC) comes from each chip's `telemetry` member; a reading the fixture
// lacks answers -8255 NOT_SUPPORT. A missing variable or unreadable file makes dcmi_init fail with
// -8005 (inner error) and a line on stderr. Without the variable, the fixture JSON of the host
// root the library was loaded from is used (JsonPath). Virtual NPUs: each chip's `vnpu` member
// (VdevMng), and dcmi_create_vdevice / dcmi_set_destroy_vdevice, whose changes are kept in
// $XPU_FAKE_DCMI_STATE when set (a test "reboots" the node by removing that file); faults
// `createBusy` (logic ids whose creates answer -8020 resource occupied) and `createDelayMs` (the
// cost of one create).
#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "base/mutex.h"
#include "kubeletplugin/discovery/internal/dcmi_types.h"
#include "kubeletplugin/discovery/testing/call_locked.h"
#include "kubeletplugin/discovery/testing/fixture_json.h"

namespace dc = ::xpu::discovery::dcmi;
using ::xpu::discovery::testing::CallLocked;

namespace {

struct State {
  xpu::Mutex mu;
  bool initialized GUARDED_BY(mu) = false;
  nlohmann::json doc GUARDED_BY(mu);
  std::set<int> gone GUARDED_BY(mu);
  std::set<int> unhealthy GUARDED_BY(mu);
  std::set<int> links_down GUARDED_BY(mu);
  std::set<int> hccs_down GUARDED_BY(mu);
  // (logic id, function) -> code
  std::map<std::pair<int, std::string>, int> call_errors GUARDED_BY(mu);
  // vNPUs made and destroyed through the library: {"created": [{logicId, vdevId, name, aicore,
  // aicpu, memoryMB}], "destroyed": [{logicId, vdevId}]}, kept in $XPU_FAKE_DCMI_STATE when set
  // (so they outlive the process, as a real device's do until a reboot), else in memory.
  nlohmann::json dynamic GUARDED_BY(mu) = {{"created", nlohmann::json::array()},
                                           {"destroyed", nlohmann::json::array()}};
  std::set<int> create_busy GUARDED_BY(mu);  // logic ids whose creates answer "occupied"
  int create_delay_ms GUARDED_BY(mu) = 0;    // what one create costs
};

State& S() {
  static State state;  // destroyed by dlclose, so nothing leaks across tests
  return state;
}

// $XPU_FAKE_DCMI_DEV_DIR (in a container: /dev): only the chips whose <dir>/davinci<phy id>
// exists, and the cards that keep one, as DCMI answers in a container given some NPUs' nodes.
void FilterByDeviceNodes(nlohmann::json& doc) {
  const char* dir = std::getenv("XPU_FAKE_DCMI_DEV_DIR");
  if (dir == nullptr || *dir == '\0') return;
  nlohmann::json chips = nlohmann::json::array();
  std::set<std::pair<int, int>> kept;
  for (const nlohmann::json& c : doc.at("chips")) {
    const std::string node =
        std::string(dir) + "/davinci" + std::to_string(c.at("phyId").get<int>());
    if (::access(node.c_str(), F_OK) != 0) continue;
    kept.emplace(c.at("cardId").get<int>(), c.at("deviceId").get<int>());
    chips.push_back(c);
  }
  nlohmann::json cards = nlohmann::json::array();
  for (nlohmann::json c : doc.at("cards")) {
    nlohmann::json ids = nlohmann::json::array();
    for (const nlohmann::json& id : c.at("npuDeviceIds")) {
      if (kept.contains({c.at("cardId").get<int>(), id.get<int>()})) ids.push_back(id);
    }
    if (ids.empty()) continue;
    c["npuDeviceIds"] = ids;
    cards.push_back(std::move(c));
  }
  doc["chips"] = std::move(chips);
  doc["cards"] = std::move(cards);
}

int Load(State& s) REQUIRES(s.mu) {
  s.initialized = false;
  // $XPU_FAKE_DCMI_JSON, else the fixture of the host root this file was loaded from: a fixture's
  // usr/local/Ascend/driver/lib64/driver/libdcmi.so is a symlink to this library, so a plugin that
  // searches its host root's library folders answers from <host root>/fake-vendor/dcmi.json.
  const std::string json_path = xpu::discovery::testing::FixtureJsonPath(
      "XPU_FAKE_DCMI_JSON", "dcmi.json", reinterpret_cast<void*>(&S));
  const char* path = json_path.c_str();
  if (json_path.empty()) {
    std::fprintf(stderr, "fake dcmi: XPU_FAKE_DCMI_JSON is not set\n");
    return dc::kErrInnerErr;
  }
  try {
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "fake dcmi: cannot read %s\n", path);
      return dc::kErrInnerErr;
    }
    nlohmann::json doc = nlohmann::json::parse(in);
    const nlohmann::json faults = doc.value("faults", nlohmann::json::object());
    if (faults.contains("init") && !faults["init"].is_null()) return faults["init"].get<int>();
    s.gone = faults.value("deviceGone", std::set<int>{});
    s.unhealthy = faults.value("unhealthy", std::set<int>{});
    s.links_down = faults.value("linkDown", std::set<int>{});
    s.hccs_down = faults.value("hccsDown", std::set<int>{});
    s.create_busy = faults.value("createBusy", std::set<int>{});
    s.create_delay_ms = faults.value("createDelayMs", 0);
    if (const char* state = std::getenv("XPU_FAKE_DCMI_STATE"); state != nullptr && *state) {
      std::ifstream saved(state);
      s.dynamic = saved ? nlohmann::json::parse(saved)
                        : nlohmann::json{{"created", nlohmann::json::array()},
                                         {"destroyed", nlohmann::json::array()}};
    }
    s.call_errors.clear();
    for (const nlohmann::json& e : faults.value("callErrors", nlohmann::json::array())) {
      s.call_errors[{e.at("logicId").get<int>(), e.at("function").get<std::string>()}] =
          e.at("code").get<int>();
    }
    s.doc = std::move(doc);
    FilterByDeviceNodes(s.doc);
    s.initialized = true;
    return dc::kOk;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fake dcmi: %s: %s\n", path, e.what());
    return dc::kErrInnerErr;
  }
}

// The chip at (card, device) for function `fn`, after the faults: kOk and *chip set, or the code
// the real library would give.
int FindChip(State& s, int card, int device, const char* fn, const nlohmann::json** chip)
    REQUIRES(s.mu) {
  if (!s.initialized) return dc::kErrNotReady;
  for (const nlohmann::json& c : s.doc.at("chips")) {
    if (c.at("cardId").get<int>() != card || c.at("deviceId").get<int>() != device) continue;
    int logic = c.at("logicId").get<int>();
    if (s.gone.count(logic) != 0) return dc::kErrDeviceNotExist;
    auto it = s.call_errors.find({logic, fn});
    if (it != s.call_errors.end()) return it->second;
    *chip = &c;
    return dc::kOk;
  }
  return dc::kErrInvalidDeviceId;
}

// What every function but dcmi_init does first: under the lock, kErrInvalidParameter unless
// `args_ok` (the caller's pointers are set), kErrNotReady before dcmi_init. `answer` gives the
// code after that.
template <typename Answer>
int WithState(bool args_ok, Answer answer) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  if (!args_ok) return dc::kErrInvalidParameter;
  if (!s.initialized) return dc::kErrNotReady;
  return CallLocked(s, answer);
}

// What every per-chip function does first: under the lock, kErrInvalidParameter unless
// `args_ok` (the caller's pointers are set), then the chip at (card, device) for `fn`, after the
// faults. `answer` gives the code for a chip that answers.
template <typename Answer>
int WithChip(int card, int device, const char* fn, bool args_ok, Answer answer) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  if (!args_ok) return dc::kErrInvalidParameter;
  const nlohmann::json* chip = nullptr;
  if (const int rc = FindChip(s, card, device, fn, &chip); rc != dc::kOk) return rc;
  return CallLocked(s, answer, *chip);
}

int CopyString(const std::string& value, char* buf, long long len) {
  if (buf == nullptr || len <= 0) return dc::kErrInvalidParameter;
  if (static_cast<long long>(value.size()) + 1 > len) return dc::kErrInvalidParameter;
  std::memcpy(buf, value.c_str(), value.size() + 1);
  return dc::kOk;
}

template <size_t N>
void CopyField(const std::string& value, unsigned char (&out)[N]) {
  std::memset(out, 0, N);
  std::memcpy(out, value.data(), std::min(value.size(), N - 1));
}

}  // namespace

#define XPU_FAKE_EXPORT extern "C" __attribute__((visibility("default")))

XPU_FAKE_EXPORT int dcmi_init() {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  return Load(s);
}

XPU_FAKE_EXPORT int dcmi_get_dcmi_version(char* dcmi_ver, unsigned int len) {
  return WithState(true, [&](State& s) REQUIRES(s.mu) {
    return CopyString(s.doc.value("dcmiVersion", ""), dcmi_ver, len);
  });
}

XPU_FAKE_EXPORT int dcmi_get_driver_version(char* driver_ver, unsigned int len) {
  return WithState(true, [&](State& s) REQUIRES(s.mu) {
    return CopyString(s.doc.value("driverVersion", ""), driver_ver, len);
  });
}

XPU_FAKE_EXPORT int dcmi_get_card_list(int* card_num, int* card_list, int list_len) {
  return WithState(card_num != nullptr && card_list != nullptr, [&](State& s) REQUIRES(s.mu) {
    const nlohmann::json& cards = s.doc.at("cards");
    if (static_cast<int>(cards.size()) > list_len) return dc::kErrInvalidParameter;
    *card_num = 0;
    for (const nlohmann::json& c : cards) card_list[(*card_num)++] = c.at("cardId").get<int>();
    return dc::kOk;
  });
}

namespace {
const nlohmann::json* FindCard(State& s, int card_id) REQUIRES(s.mu) {
  for (const nlohmann::json& c : s.doc.at("cards")) {
    if (c.at("cardId").get<int>() == card_id) return &c;
  }
  return nullptr;
}
}  // namespace

XPU_FAKE_EXPORT int dcmi_get_device_num_in_card(int card_id, int* device_num) {
  return WithState(device_num != nullptr, [&](State& s) REQUIRES(s.mu) {
    const nlohmann::json* card = FindCard(s, card_id);
    if (card == nullptr) return dc::kErrInvalidDeviceId;
    *device_num = static_cast<int>(card->at("npuDeviceIds").size());
    return dc::kOk;
  });
}

XPU_FAKE_EXPORT int dcmi_get_device_id_in_card(int card_id, int* device_id_max, int* mcu_id,
                                               int* cpu_id) {
  return WithState(device_id_max != nullptr && mcu_id != nullptr && cpu_id != nullptr,
                   [&](State& s) REQUIRES(s.mu) {
                     const nlohmann::json* card = FindCard(s, card_id);
                     if (card == nullptr) return dc::kErrInvalidDeviceId;
                     *device_id_max = static_cast<int>(card->at("npuDeviceIds").size());
                     *mcu_id = card->value("mcuDeviceId", -1);
                     *cpu_id = -1;
                     return dc::kOk;
                   });
}

XPU_FAKE_EXPORT int dcmi_get_device_logic_id(int* device_logic_id, int card_id, int device_id) {
  return WithChip(card_id, device_id, __func__, device_logic_id != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    *device_logic_id = chip.at("logicId").get<int>();
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_phyid_from_logicid(unsigned int logicid, unsigned int* phyid) {
  return WithState(phyid != nullptr, [&](State& s) REQUIRES(s.mu) {
    for (const nlohmann::json& c : s.doc.at("chips")) {
      if (c.at("logicId").get<unsigned>() != logicid) continue;
      auto it =
          s.call_errors.find({static_cast<int>(logicid), "dcmi_get_device_phyid_from_logicid"});
      if (it != s.call_errors.end()) return it->second;
      if (s.gone.count(static_cast<int>(logicid)) != 0) return dc::kErrDeviceNotExist;
      *phyid = c.at("phyId").get<unsigned>();
      return dc::kOk;
    }
    return dc::kErrInvalidDeviceId;
  });
}

XPU_FAKE_EXPORT int dcmi_get_device_logicid_from_phyid(unsigned int phyid, unsigned int* logicid) {
  return WithState(logicid != nullptr, [&](State& s) REQUIRES(s.mu) {
    for (const nlohmann::json& c : s.doc.at("chips")) {
      if (c.at("phyId").get<unsigned>() != phyid) continue;
      *logicid = c.at("logicId").get<unsigned>();
      return dc::kOk;
    }
    return dc::kErrInvalidDeviceId;
  });
}

XPU_FAKE_EXPORT int dcmi_get_device_chip_info(int card_id, int device_id,
                                              dc::dcmi_chip_info* chip_info) {
  return WithChip(card_id, device_id, __func__, chip_info != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    CopyField(chip.value("chipType", ""), chip_info->chip_type);
                    CopyField(chip.value("chipName", ""), chip_info->chip_name);
                    CopyField(chip.value("chipVer", ""), chip_info->chip_ver);
                    chip_info->aicore_cnt = chip.value("aicoreCount", 0U);
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_pcie_info_v2(int card_id, int device_id,
                                                 dc::dcmi_pcie_info_all* pcie_info) {
  return WithChip(card_id, device_id, __func__, pcie_info != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    *pcie_info = dc::dcmi_pcie_info_all{};
                    unsigned domain = 0, bus = 0, slot = 0, function = 0;
                    if (std::sscanf(chip.value("pciBusId", "").c_str(), "%x:%x:%x.%x", &domain,
                                    &bus, &slot, &function) != 4) {
                      return dc::kErrNotSupport;
                    }
                    pcie_info->venderid = 0x19e5;
                    pcie_info->deviceid = chip.value("pciDeviceId", 0U);
                    pcie_info->domain = static_cast<int>(domain);
                    pcie_info->bdf_busid = bus;
                    pcie_info->bdf_deviceid = slot;
                    pcie_info->bdf_funcid = function;
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_hbm_info(int card_id, int device_id,
                                             dc::dcmi_hbm_info* hbm_info) {
  return WithChip(card_id, device_id, __func__, hbm_info != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    const nlohmann::json hbm = chip.value("hbm", nlohmann::json::object());
                    *hbm_info = dc::dcmi_hbm_info{};
                    hbm_info->memory_size = hbm.value("totalMB", 0ULL);
                    hbm_info->memory_usage = hbm.value("usedMB", 0ULL);
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_health(int card_id, int device_id, unsigned int* health) {
  return WithChip(card_id, device_id, __func__, health != nullptr,
                  [&](State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
                    *health = chip.value("health", 0U);
                    if (s.unhealthy.count(chip.at("logicId").get<int>()) != 0 && *health < 2) {
                      *health = 2;
                    }
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_ip(int card_id, int device_id,
                                       enum dc::dcmi_port_type input_type, int port_id,
                                       dc::dcmi_ip_addr* ip, dc::dcmi_ip_addr* mask) {
  const bool args_ok =
      ip != nullptr && mask != nullptr && input_type < dc::DCMI_INVALID_PORT && port_id == 0;
  return WithChip(card_id, device_id, __func__, args_ok, [&](State&, const nlohmann::json& chip) {
    std::string text = chip.value("deviceIp", "");
    if (input_type != dc::DCMI_ROCE_PORT || text.empty()) return dc::kErrNotSupport;
    *ip = dc::dcmi_ip_addr{};
    *mask = dc::dcmi_ip_addr{};
    if (inet_pton(AF_INET, text.c_str(), ip->u_addr.ip4) != 1) return dc::kErrInnerErr;
    ip->ip_type = dc::DCMI_IPADDR_TYPE_V4;
    mask->ip_type = dc::DCMI_IPADDR_TYPE_V4;
    std::memset(mask->u_addr.ip4, 0xff, 3);
    return dc::kOk;
  });
}

XPU_FAKE_EXPORT int dcmi_get_device_network_health(int card_id, int device_id, int* result) {
  return WithChip(card_id, device_id, __func__, result != nullptr,
                  [&](State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
                    *result = s.links_down.count(chip.at("logicId").get<int>()) != 0
                                  ? dc::kDetectUnreach
                                  : chip.value("networkHealth", 0);
                    return dc::kOk;
                  });
}

XPU_FAKE_EXPORT int dcmi_get_product_type(int card_id, int device_id, char* product_type_str,
                                          int buf_size) {
  return WithChip(card_id, device_id, __func__, true,
                  [&](State& s, const nlohmann::json&) REQUIRES(s.mu) {
                    return CopyString(s.doc.value("productType", ""), product_type_str, buf_size);
                  });
}

XPU_FAKE_EXPORT int dcmi_get_topo_info_by_device_id(int card_id1, int device_id1, int card_id2,
                                                    int device_id2, int* topo_type) {
  State& s = S();
  xpu::MutexLock lock(s.mu);
  if (topo_type == nullptr) return dc::kErrInvalidParameter;
  const nlohmann::json* a = nullptr;
  const nlohmann::json* b = nullptr;
  int rc = FindChip(s, card_id1, device_id1, "dcmi_get_topo_info_by_device_id", &a);
  if (rc == dc::kOk) rc = FindChip(s, card_id2, device_id2, "dcmi_get_topo_info_by_device_id", &b);
  if (rc != dc::kOk) return rc;
  const nlohmann::json& matrix = s.doc.at("topology");
  size_t i = a->at("logicId").get<size_t>(), j = b->at("logicId").get<size_t>();
  if (i >= matrix.size() || j >= matrix[i].size()) return dc::kErrInvalidDeviceId;
  *topo_type = matrix[i][j].get<int>();
  return dc::kOk;
}

// GET_STATISTIC_INFO_U64 from the chip's "hccs" member.
int HccsStatistics(const nlohmann::json& hccs, void* buf, unsigned int* size) {
  if (*size < sizeof(dc::dcmi_hccs_statistic_info_u64)) return dc::kErrInvalidParameter;
  dc::dcmi_hccs_statistic_info_u64 stats{};
  const auto fill = [&](const char* key, unsigned long long* out) {
    const nlohmann::json values = hccs.value(key, nlohmann::json::array());
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(dc::kHccsMaxPcs); ++i) {
      out[i] = values[i].get<unsigned long long>();
    }
  };
  fill("crcErrors", stats.crc_err_cnt);
  fill("retries", stats.retry_cnt);
  std::memcpy(buf, &stats, sizeof stats);
  *size = sizeof stats;
  return dc::kOk;
}

// The vNPUs on a chip now: the fixture's, less those destroyed, and those created.
nlohmann::json VdevicesOf(State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
  const int logic = chip.at("logicId").get<int>();
  nlohmann::json out = nlohmann::json::array();
  const nlohmann::json fixture =
      chip.value("vnpu", nlohmann::json::object()).value("vdevices", nlohmann::json::array());
  for (const nlohmann::json& v : fixture) {
    const bool destroyed = std::any_of(
        s.dynamic["destroyed"].begin(), s.dynamic["destroyed"].end(), [&](const nlohmann::json& d) {
          return d.at("logicId") == logic && d.at("vdevId") == v.at("vdevId");
        });
    if (!destroyed) out.push_back(v);
  }
  for (const nlohmann::json& v : s.dynamic["created"]) {
    if (v.at("logicId") == logic) out.push_back(v);
  }
  return out;
}

// Writes the created and destroyed vNPUs where $XPU_FAKE_DCMI_STATE says (temp file, rename).
int SaveDynamic(State& s) REQUIRES(s.mu) {
  const char* path = std::getenv("XPU_FAKE_DCMI_STATE");
  if (path == nullptr || *path == '\0') return dc::kOk;
  const std::string tmp = std::string(path) + ".tmp";
  {
    std::ofstream out(tmp);
    out << s.dynamic.dump(2) << "\n";
    if (!out) return dc::kErrFileOperateFail;
  }
  return std::rename(tmp.c_str(), path) == 0 ? dc::kOk : dc::kErrFileOperateFail;
}

// DCMI_MAIN_CMD_VDEV_MNG from the chip's "vnpu" member ({aicore, aicpu, memoryMB, vdevices:
// [{vdevId, vfgId, name, aicore, aicpu, memoryMB, inUse}]}): GET_TOTAL_RESOURCE and
// GET_VDEV_RESOURCE (an unknown vdev_id: invalid parameter). A chip without it: not supported.
int VdevMng(State& s, const nlohmann::json& chip, unsigned int sub_cmd, void* buf,
            unsigned int* size) REQUIRES(s.mu) {
  if (!chip.contains("vnpu")) return dc::kErrNotSupport;
  const nlohmann::json& vnpu = chip.at("vnpu");
  const nlohmann::json vdevices = VdevicesOf(s, chip);
  auto computing = [](const nlohmann::json& from, dc::dcmi_computing_resource* out) {
    out->aic = from.value("aicore", 0.0F);
    out->device_aicpu = from.value("aicpu", static_cast<unsigned short>(0));
    out->memory_size = from.value("memoryMB", 0ULL);
  };
  if (sub_cmd == dc::kVmngSubCmdGetTotalResource) {
    if (*size < sizeof(dc::dcmi_soc_total_resource)) return dc::kErrInvalidParameter;
    dc::dcmi_soc_total_resource total{};
    computing(vnpu, &total.computing);
    for (const nlohmann::json& v : vdevices) {
      if (total.vdev_num == dc::kSocSplitMax) break;
      total.vdev_id[total.vdev_num++] = v.at("vdevId").get<unsigned>();
    }
    std::memcpy(buf, &total, sizeof total);
    *size = sizeof total;
    return dc::kOk;
  }
  if (sub_cmd != dc::kVmngSubCmdGetVdevResource) return dc::kErrNotSupport;
  if (*size < sizeof(dc::dcmi_vdev_query_stru)) return dc::kErrInvalidParameter;
  dc::dcmi_vdev_query_stru query{};
  std::memcpy(&query, buf, sizeof query);
  for (const nlohmann::json& v : vdevices) {
    if (v.at("vdevId").get<unsigned>() != query.vdev_id) continue;
    dc::dcmi_vdev_query_info& info = query.query_info;
    const std::string name = v.value("name", "");
    std::strncpy(info.name, name.c_str(), sizeof info.name - 1);
    info.vfg_id = v.value("vfgId", 0U);
    info.is_container_used = v.value("inUse", false) ? 1 : 0;
    computing(v, &info.computing);
    std::memcpy(buf, &query, sizeof query);
    *size = sizeof query;
    return dc::kOk;
  }
  return dc::kErrInvalidParameter;
}

// Only DCMI_MAIN_CMD_HCCS / GET_STATUS and GET_STATISTIC_INFO_U64 are answered; other commands
// are "not supported". A chip without an "hccs" member (a PCIe card) answers "not supported" too.
// The statistics come from hccs.crcErrors / hccs.retries: arrays by macro (PCS), 0 beyond them.
XPU_FAKE_EXPORT int dcmi_get_device_info(int card_id, int device_id, int main_cmd,
                                         unsigned int sub_cmd, void* buf, unsigned int* size) {
  return WithChip(card_id, device_id, __func__, buf != nullptr && size != nullptr,
                  [&](State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
                    if (main_cmd == dc::kMainCmdVdevMng) {
                      return VdevMng(s, chip, sub_cmd, buf, size);
                    }
                    if (main_cmd != dc::kMainCmdHccs || !chip.contains("hccs")) {
                      return dc::kErrNotSupport;
                    }
                    if (sub_cmd == dc::kHccsCmdGetStatisticInfoU64) {
                      return HccsStatistics(chip.at("hccs"), buf, size);
                    }
                    if (sub_cmd != dc::kHccsCmdGetStatus) return dc::kErrNotSupport;
                    if (*size < sizeof(dc::dcmi_hccs_statues)) return dc::kErrInvalidParameter;
                    dc::dcmi_hccs_statues st{};
                    const nlohmann::json& hccs = chip.at("hccs");
                    st.pcs_status = hccs.value("pcsStatus", 0U);
                    st.hdlc_status = hccs.value("hdlcStatus", dc::kHdlcStatusOk);
                    if (s.hccs_down.count(chip.at("logicId").get<int>()) != 0) {
                      st.pcs_status = 1;
                      st.hdlc_status = 0;
                    }
                    std::memcpy(buf, &st, sizeof st);
                    *size = sizeof st;
                    return dc::kOk;
                  });
}

// Components by the names the fixture uses ("NVE", "XLOADER", "IMU", "HILINK", ...); one the
// chip does not list is "not supported".
XPU_FAKE_EXPORT int dcmi_get_device_component_static_version(int card_id, int device_id,
                                                             int component_type,
                                                             unsigned char* version_str,
                                                             unsigned int len) {
  return WithChip(card_id, device_id, __func__, version_str != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    const char* name = component_type == dc::kComponentNve       ? "NVE"
                                       : component_type == dc::kComponentXloader ? "XLOADER"
                                       : component_type == dc::kComponentImu     ? "IMU"
                                       : component_type == dc::kComponentHilink  ? "HILINK"
                                                                                 : "";
                    const nlohmann::json firmware =
                        chip.value("firmware", nlohmann::json::object());
                    if (!firmware.contains(name)) return dc::kErrNotSupport;
                    return CopyString(firmware.at(name).get<std::string>(),
                                      reinterpret_cast<char*>(version_str), len);
                  });
}

namespace {

// Writes the chip's telemetry member `key` to *out; NOT_SUPPORT when the fixture has none.
template <typename T>
int Reading(const nlohmann::json& chip, const char* key, T* out) {
  const nlohmann::json telemetry = chip.value("telemetry", nlohmann::json::object());
  auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_number()) return dc::kErrNotSupport;
  *out = it->get<T>();
  return dc::kOk;
}

}  // namespace

XPU_FAKE_EXPORT int dcmi_get_device_temperature(int card_id, int device_id, int* temperature) {
  return WithChip(card_id, device_id, __func__, temperature != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    return Reading(chip, "temperatureC", temperature);
                  });
}

XPU_FAKE_EXPORT int dcmi_get_device_power_info(int card_id, int device_id, int* power) {
  return WithChip(
      card_id, device_id, __func__, power != nullptr,
      [&](State&, const nlohmann::json& chip) { return Reading(chip, "powerDeciwatts", power); });
}

// Only the AI Core (input_type 2) is in the fixtures; other types answer NOT_SUPPORT.
XPU_FAKE_EXPORT int dcmi_get_device_utilization_rate(int card_id, int device_id, int input_type,
                                                     unsigned int* utilization_rate) {
  return WithChip(card_id, device_id, __func__, utilization_rate != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    if (input_type != dc::kUtilizationAiCore) return dc::kErrNotSupport;
                    return Reading(chip, "aicoreUtilizationPercent", utilization_rate);
                  });
}

// HBM counters from telemetry.hbmEcc {singleBit, doubleBit}; other memories answer NOT_SUPPORT.
XPU_FAKE_EXPORT int dcmi_get_device_ecc_info(int card_id, int device_id, int device_type,
                                             dc::dcmi_ecc_info* ecc) {
  return WithChip(card_id, device_id, __func__, ecc != nullptr,
                  [&](State&, const nlohmann::json& chip) {
                    const nlohmann::json t = chip.value("telemetry", nlohmann::json::object());
                    auto it = t.find("hbmEcc");
                    if (device_type != dc::kDeviceTypeHbm || it == t.end()) {
                      return dc::kErrNotSupport;
                    }
                    *ecc = dc::dcmi_ecc_info{};
                    ecc->enable_flag = 1;
                    ecc->single_bit_error_cnt = it->value("singleBit", 0U);
                    ecc->double_bit_error_cnt = it->value("doubleBit", 0U);
                    ecc->total_single_bit_error_cnt = ecc->single_bit_error_cnt;
                    ecc->total_double_bit_error_cnt = ecc->double_bit_error_cnt;
                    return dc::kOk;
                  });
}

// A vNPU from a template of the chip's "vnpu.templates" ({name: {aicore, aicpu, memoryMB}}):
// "not supported" without virtualisation, "invalid parameter" for an unknown template or a vdev
// id in use on the node, "resource occupied" when the chip's AI Cores, AI CPUs or memory left
// cannot hold it or the chip is listed in faults.createBusy. Each create takes
// faults.createDelayMs.
XPU_FAKE_EXPORT int dcmi_create_vdevice(int card_id, int device_id,
                                        dc::dcmi_create_vdev_res_stru* vdev,
                                        dc::dcmi_create_vdev_out* out) {
  return WithChip(
      card_id, device_id, __func__, vdev != nullptr && out != nullptr,
      [&](State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
        if (!chip.contains("vnpu")) return dc::kErrNotSupport;
        const int logic = chip.at("logicId").get<int>();
        if (s.create_busy.contains(logic)) return dc::kErrResourceOccupied;
        const std::string name(vdev->template_name,
                               strnlen(vdev->template_name, sizeof vdev->template_name));
        const nlohmann::json templates =
            chip.at("vnpu").value("templates", nlohmann::json::object());
        if (!templates.contains(name)) return dc::kErrInvalidParameter;
        const nlohmann::json& t = templates.at(name);
        for (const char* key : {"aicore", "aicpu", "memoryMB"}) {
          double used = t.value(key, 0.0);
          for (const nlohmann::json& v : VdevicesOf(s, chip)) used += v.value(key, 0.0);
          if (used > chip.at("vnpu").value(key, 0.0)) return dc::kErrResourceOccupied;
        }
        unsigned highest = 99;
        bool taken = false;
        for (const nlohmann::json& c : s.doc.at("chips")) {
          for (const nlohmann::json& v : VdevicesOf(s, c)) {
            const auto id = v.at("vdevId").get<unsigned>();
            highest = std::max(highest, id);
            taken = taken || id == vdev->vdev_id;
          }
        }
        if (taken) return dc::kErrInvalidParameter;
        const unsigned id = vdev->vdev_id == dc::kVdevIdAuto ? highest + 1 : vdev->vdev_id;
        if (s.create_delay_ms > 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(s.create_delay_ms));
        }
        nlohmann::json made = t;
        made["logicId"] = logic;
        made["vdevId"] = id;
        made["name"] = name;
        s.dynamic["created"].push_back(made);
        if (const int rc = SaveDynamic(s); rc != dc::kOk) return rc;
        *out = dc::dcmi_create_vdev_out{};
        out->vdev_id = id;
        return dc::kOk;
      });
}

// "invalid parameter" for a vdev id the chip does not have.
XPU_FAKE_EXPORT int dcmi_set_destroy_vdevice(int card_id, int device_id, unsigned int vdevid) {
  return WithChip(card_id, device_id, __func__, true,
                  [&](State& s, const nlohmann::json& chip) REQUIRES(s.mu) {
                    const int logic = chip.at("logicId").get<int>();
                    nlohmann::json& created = s.dynamic["created"];
                    for (auto it = created.begin(); it != created.end(); ++it) {
                      if ((*it)["logicId"] == logic && (*it)["vdevId"] == vdevid) {
                        created.erase(it);
                        return SaveDynamic(s);
                      }
                    }
                    for (const nlohmann::json& v : VdevicesOf(s, chip)) {
                      if (v.at("vdevId") != vdevid) continue;
                      s.dynamic["destroyed"].push_back({{"logicId", logic}, {"vdevId", vdevid}});
                      return SaveDynamic(s);
                    }
                    return dc::kErrInvalidParameter;
                  });
}
