// xpu-container-check: what a container sees, as one JSON document on stdout, for the
// upstream-runtime tests (a pod's log) and the demo's report. Runs as the only program of a
// minimal image that holds no vendor file (e2e/container/build-image.sh), statically linked:
//  - "deviceNodes": the character and block devices under /dev, with their major and minor
//    (the runtime's default ones, null, zero, tty and the like, are left out);
//  - "env": the visibility variables (*_VISIBLE_DEVICES), XPU_DRA_*, LD_LIBRARY_PATH and the
//    gang variables (RANK_TABLE_FILE, WORLD_SIZE, NODE_RANK, ...);
//  - "mounts": the container's mount points from /proc/self/mountinfo, but those every container
//    has (/proc, /sys, /dev and their subtrees, /etc/hosts, ...);
//  - "ldCache": whether /etc/ld.so.cache exists;
//  - "libraries": each vendor library loaded by its soname through the dynamic loader, as a
//    framework loads it (dlopen, so through the loader cache the CDI hook wrote), and asked for
//    its device count and each device's identity: NVML (libnvidia-ml.so.1: nvmlInit_v2,
//    nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID) and DCMI
//    (libdcmi.so: dcmi_init, dcmi_get_card_list, dcmi_get_device_num_in_card,
//    dcmi_get_device_logic_id, dcmi_get_device_phyid_from_logicid) and Hygon's DMI (libhydmi.so:
//    dmiGetDeviceCount, dmiGetDeviceInfo);
//  - "files": the files named by --file, with their first line (a gang's rank table).
// `--every SECONDS` prints the report again every SECONDS until SIGTERM (a pod that keeps its
// devices while the runtime restarts); `--pause` sleeps until SIGTERM or SIGINT: the pod
// sandbox's process (no registry is reachable, so the image serves as the pause image too).
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Json = nlohmann::json;

// The devices every OCI container gets (runtime spec, "Default Devices") and the pty ones.
bool IsDefaultDevice(std::string_view path) {
  static const std::set<std::string_view> kDefault = {
      "/dev/null",    "/dev/zero", "/dev/full", "/dev/random",  "/dev/urandom", "/dev/tty",
      "/dev/console", "/dev/ptmx", "/dev/fuse", "/dev/net/tun", "/dev/kmsg"};
  return kDefault.contains(path) || path.starts_with("/dev/pts/");
}

void WalkDevices(const std::string& dir, Json& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    std::string path = dir;
    path.append("/").append(name);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && path != "/dev/shm" && path != "/dev/mqueue") {
      WalkDevices(path, out);
    } else if ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && !IsDefaultDevice(path)) {
      out.push_back({{"path", path},
                     {"type", S_ISCHR(st.st_mode) ? "c" : "b"},
                     {"major", major(st.st_rdev)},
                     {"minor", minor(st.st_rdev)}});
    }
  }
}

bool IsReportedVariable(std::string_view name) {
  static const std::set<std::string_view> kNames = {
      "LD_LIBRARY_PATH", "RANK_TABLE_FILE", "WORLD_SIZE",  "RANK_SIZE",
      "NODE_RANK",       "NNODES",          "MASTER_ADDR", "LOCAL_WORLD_SIZE"};
  return name.ends_with("_VISIBLE_DEVICES") || name.starts_with("XPU_DRA_") ||
         kNames.contains(name);
}

Json Environment() {
  Json out = Json::object();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || !IsReportedVariable(entry.substr(0, eq))) continue;
    out[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return out;
}

bool IsCommonMount(std::string_view point) {
  for (const std::string_view prefix : {"/proc", "/sys", "/dev"}) {
    if (point == prefix || point.starts_with(std::string(prefix) + "/")) return true;
  }
  return point == "/" || point == "/etc/hosts" || point == "/etc/hostname" ||
         point == "/etc/resolv.conf" || point.starts_with("/var/run/secrets/");
}

Json Mounts() {
  Json out = Json::array();
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "<id> <parent> <major:minor> <root> <mount point> <options> ... - <fstype> <source> ..."
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point.empty() || IsCommonMount(point)) continue;
    out.push_back({{"path", point}, {"root", root}});
  }
  return out;
}

// A function of a library loaded at run time, or null.
template <typename F>
F Symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

// True, with the error in `out`, when the library call `fn` returned `rc` other than 0.
bool CallFailed(const char* fn, int rc, Json& out) {
  if (rc == 0) return false;
  out["error"] = std::string(fn) + ": " + std::to_string(rc);
  return true;
}

// What `lib` (libnvidia-ml.so.1) reads, added to `out`.
Json Nvml(void* lib, Json out) {
  auto init = Symbol<int (*)()>(lib, "nvmlInit_v2");
  auto count = Symbol<int (*)(unsigned*)>(lib, "nvmlDeviceGetCount_v2");
  auto handle = Symbol<int (*)(unsigned, void**)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto uuid = Symbol<int (*)(void*, char*, unsigned)>(lib, "nvmlDeviceGetUUID");
  if (init == nullptr || count == nullptr || handle == nullptr || uuid == nullptr) {
    out["error"] = "a function is missing from libnvidia-ml.so.1";
    return out;
  }
  if (CallFailed("nvmlInit_v2", init(), out)) return out;
  unsigned n = 0;
  if (CallFailed("nvmlDeviceGetCount_v2", count(&n), out)) return out;
  out["deviceCount"] = n;
  Json devices = Json::array();
  for (unsigned i = 0; i < n; ++i) {
    void* device = nullptr;
    char id[96] = {};
    Json d = {{"index", i}};
    if (handle(i, &device) == 0 && uuid(device, id, sizeof id) == 0) d["uuid"] = id;
    devices.push_back(std::move(d));
  }
  out["devices"] = std::move(devices);
  return out;
}

// What `lib` (libdcmi.so) reads, added to `out`.
Json Dcmi(void* lib, Json out) {
  auto init = Symbol<int (*)()>(lib, "dcmi_init");
  auto cards = Symbol<int (*)(int*, int*, int)>(lib, "dcmi_get_card_list");
  auto per_card = Symbol<int (*)(int, int*)>(lib, "dcmi_get_device_num_in_card");
  auto logic = Symbol<int (*)(int*, int, int)>(lib, "dcmi_get_device_logic_id");
  auto phy = Symbol<int (*)(unsigned, unsigned*)>(lib, "dcmi_get_device_phyid_from_logicid");
  if (init == nullptr || cards == nullptr || per_card == nullptr || logic == nullptr ||
      phy == nullptr) {
    out["error"] = "a function is missing from libdcmi.so";
    return out;
  }
  if (CallFailed("dcmi_init", init(), out)) return out;
  int card_count = 0;
  int card_ids[64] = {};
  if (CallFailed("dcmi_get_card_list", cards(&card_count, card_ids, 64), out)) return out;
  Json devices = Json::array();
  for (int c = 0; c < card_count; ++c) {
    int n = 0;
    if (per_card(card_ids[c], &n) != 0) continue;
    for (int d = 0; d < n; ++d) {
      int logic_id = -1;
      unsigned phy_id = 0;
      Json device = {{"card", card_ids[c]}, {"device", d}};
      if (logic(&logic_id, card_ids[c], d) == 0) {
        device["logicId"] = logic_id;
        if (phy(static_cast<unsigned>(logic_id), &phy_id) == 0) device["phyId"] = phy_id;
      }
      devices.push_back(std::move(device));
    }
  }
  out["deviceCount"] = devices.size();
  out["devices"] = std::move(devices);
  return out;
}

// DMI's dmiDeviceInfo, as its public header dmi_virtual.h declares it (docs/partitions.md).
struct DmiDeviceInfo {
  char name[256];
  int compute_unit_count;
  size_t global_mem_size;
  size_t usage_mem_size;
  uint64_t container_id;
  int device_id;
};

// What `lib` (libhydmi.so) reads, added to `out`.
Json Hydmi(void* lib, Json out) {
  auto count = Symbol<int (*)(int*)>(lib, "dmiGetDeviceCount");
  auto info = Symbol<int (*)(int, DmiDeviceInfo*)>(lib, "dmiGetDeviceInfo");
  if (count == nullptr || info == nullptr) {
    out["error"] = "a function is missing from libhydmi.so";
    return out;
  }
  int n = 0;
  if (CallFailed("dmiGetDeviceCount", count(&n), out)) return out;
  Json devices = Json::array();
  for (int i = 0; i < n; ++i) {
    DmiDeviceInfo d{};
    if (CallFailed("dmiGetDeviceInfo", info(i, &d), out)) return out;
    devices.push_back(
        {{"index", i}, {"name", std::string(d.name)}, {"computeUnits", d.compute_unit_count}});
  }
  out["deviceCount"] = devices.size();
  out["devices"] = std::move(devices);
  return out;
}

// The report of the library `soname`: whether it loads and, when it does, what `read` finds
// through it.
Json Library(const char* soname, Json (*read)(void* lib, Json out)) {
  Json out = {{"soname", soname}, {"loaded", false}};
  void* lib = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    out["error"] = ::dlerror();
    return out;
  }
  out["loaded"] = true;
  return read(lib, std::move(out));
}

Json Files(const std::vector<std::string>& paths) {
  Json out = Json::object();
  for (const std::string& p : paths) {
    std::ifstream in(p);
    std::string first;
    out[p] = in ? (std::getline(in, first), Json(first)) : Json(nullptr);
  }
  return out;
}

volatile sig_atomic_t stop = 0;
void OnSignal(int) { stop = 1; }

void OnStop() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
}

int Pause() {
  OnStop();
  while (stop == 0) ::pause();
  return 0;
}

Json Report(const std::vector<std::string>& files) {
  Json devices = Json::array();
  WalkDevices("/dev", devices);
  struct stat st {};
  return {{"deviceNodes", std::move(devices)},
          {"env", Environment()},
          {"mounts", Mounts()},
          {"ldCache", ::stat("/etc/ld.so.cache", &st) == 0},
          {"libraries", Json::array({Library("libnvidia-ml.so.1", Nvml),
                                     Library("libdcmi.so", Dcmi), Library("libhydmi.so", Hydmi)})},
          {"files", Files(files)}};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  int every = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--pause") return Pause();
    if (a == "--file" && i + 1 < argc) {
      files.emplace_back(argv[++i]);
    } else if (a == "--every" && i + 1 < argc) {
      every = std::atoi(argv[++i]);
      if (every < 1) {
        std::cerr << "xpu-container-check: --every needs a positive number of seconds\n";
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      std::cout
          << "usage: xpu-container-check [--file PATH]... [--every SECONDS] | --pause\n"
             "Prints what this container sees as JSON: device nodes, visibility\n"
             "variables, mounts, and the vendor libraries (NVML, DCMI, DMI) loaded by\n"
             "soname with the devices they report. --pause sleeps until SIGTERM (a pause image).\n";
      return 0;
    } else {
      std::cerr << "xpu-container-check: unknown argument " << a << " (see --help)\n";
      return 2;
    }
  }
  if (every == 0) {
    std::cout << Report(files).dump() << "\n";
    return 0;
  }
  OnStop();
  while (stop == 0) {
    std::cout << Report(files).dump() << std::endl;
    ::sleep(static_cast<unsigned>(every));  // a signal cuts it short
  }
  return 0;
}
