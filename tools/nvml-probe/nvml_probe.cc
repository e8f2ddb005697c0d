// nvml-probe: records what a DRA driver's GPU discovery sees on this machine, as one JSON document
// on stdout. NVML is loaded at run time with dlopen("libnvidia-ml.so.1"); no NVML header or
// link-time dependency. Every NVML call goes through dlsym; a missing symbol or an error return is
// written next to its field as {"error": ...} and never stops the probe. Also records the sysfs
// view of each GPU, /proc/driver/nvidia/version, /dev/nvidia* nodes and all NVIDIA PCI functions.
// Exit codes: 0 NVML initialised, 3 libnvidia-ml.so.1 (or nvmlInit_v2) unavailable, 4 nvmlInit_v2
// failed, 1 internal error. Build: g++ -std=c++20 -O1 nvml_probe.cc -o nvml-probe -ldl
#include <dirent.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// ---- NVML declarations (from the published NVML API) ----
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlPciInfo_t {  // nvmlPciInfo_t as used by nvmlDeviceGetPciInfo_v3
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
struct nvmlGpuFabricInfo_t {
  unsigned char clusterUuid[16];
  nvmlReturn_t status;
  unsigned int cliqueId;
  unsigned char state;  // NOT_SUPPORTED=0, NOT_STARTED=1, IN_PROGRESS=2, COMPLETED=3
};
constexpr nvmlReturn_t kInvalidArgument = 2, kNotSupported = 3;
constexpr unsigned kMaxLinks = 36;  // NVML_NVLINK_MAX_LINKS in current headers (18 in older ones)
constexpr unsigned kBuf = 128;      // >= every NVML string buffer size (name/uuid 96, version 80)

void* g_lib = nullptr;

// ---- A tiny JSON tree, written with two-space indentation ----
struct J {
  enum Kind { kScalar, kObj, kArr } kind = kScalar;
  std::string raw = "null";  // encoded text of a scalar
  std::vector<std::string> keys;
  std::vector<J> vals;
  J& Set(std::string k, J v) {
    keys.push_back(std::move(k));
    vals.push_back(std::move(v));
    return *this;
  }
  J& Push(J v) { return Set("", std::move(v)); }
};
J Make(J::Kind k, std::string raw = "null") {
  J j;
  j.kind = k;
  j.raw = std::move(raw);
  return j;
}
J O(std::initializer_list<std::pair<const char*, J>> kv = {}) {
  J j = Make(J::kObj);
  for (const auto& [k, v] : kv) {
    j.Set(k, v);
  }
  return j;
}
J Arr() { return Make(J::kArr); }
J Num(long long v) { return Make(J::kScalar, std::to_string(v)); }

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
size_t Utf8Len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned c = b(0);
  size_t n = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || i + n > s.size()) {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) {
      return 0;
    }
  }
  if ((c == 0xe0 && b(1) < 0xa0) || (c == 0xed && b(1) >= 0xa0) || (c == 0xf0 && b(1) < 0x90) ||
      (c == 0xf4 && b(1) >= 0x90)) {
    return 0;  // overlong, surrogate or beyond U+10FFFF
  }
  return n;
}

std::string Quote(std::string_view s) {
  std::string o = "\"";
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else if (c >= 0x80) {
      size_t n = Utf8Len(s, i);
      o += n ? std::string(s.substr(i, n)) : std::string("\\ufffd");  // invalid byte -> U+FFFD
      i += n ? n : 1;
      continue;
    } else {
      o += static_cast<char>(c);
    }
    ++i;
  }
  return o + "\"";
}
J Str(std::string_view s) { return Make(J::kScalar, Quote(s)); }
J Err(std::string_view msg) { return O({{"error", Str(msg)}}); }

// Writes `j` at indentation `ind`; a node goes on one line when that fits in 100 columns.
void Write(const J& j, std::string& out, int ind, bool compact = false) {
  if (j.kind == J::kScalar) {
    out += j.raw;
    return;
  }
  std::string line;
  if (!compact) {
    Write(j, line, 0, true);
  }
  compact = compact || ind + line.size() <= 100;
  if (compact && !line.empty()) {
    out += line;
    return;
  }
  out += j.kind == J::kObj ? '{' : '[';
  for (size_t i = 0; i < j.vals.size(); ++i) {
    if (i) {
      out += compact ? ", " : ",";
    }
    if (!compact) {
      out += "\n" + std::string(ind + 2, ' ');
    }
    if (j.kind == J::kObj) {
      out += Quote(j.keys[i]) + ": ";
    }
    Write(j.vals[i], out, ind + 2, compact);
  }
  if (!compact && !j.vals.empty()) {
    out += "\n" + std::string(ind, ' ');
  }
  out += j.kind == J::kObj ? '}' : ']';
}

// ---- NVML calls ----
J ErrRc(nvmlReturn_t rc) {
  using Fn = const char* (*)(nvmlReturn_t);
  auto fn = reinterpret_cast<Fn>(dlsym(g_lib, "nvmlErrorString"));
  const char* text = fn ? fn(rc) : nullptr;
  return Err(text ? text : "nvmlErrorString missing").Set("code", Num(rc));
}

// Calls NVML function `name` (argument types must match its prototype exactly) and returns its
// result, or -1 when the symbol is missing; on failure *err gets {"error": ...}.
template <typename... A>
nvmlReturn_t CallRc(J* err, const char* name, A... args) {
  auto fn = reinterpret_cast<nvmlReturn_t (*)(A...)>(dlsym(g_lib, name));
  nvmlReturn_t rc = fn ? fn(args...) : -1;
  if (rc != 0) {
    *err = fn ? ErrRc(rc) : Err("symbol missing");
  }
  return rc;
}
template <typename... A>
bool Call(J* err, const char* name, A... args) {
  return CallRc(err, name, args...) == 0;
}

std::string Cstr(const char* buf, size_t cap) { return std::string(buf, strnlen(buf, cap)); }

template <typename... A>
J GetString(const char* name, A... args) {
  char buf[kBuf] = {};
  J e;
  return Call(&e, name, args..., buf, kBuf) ? Str(Cstr(buf, kBuf)) : e;
}
template <typename T, typename... A>
J GetNum(const char* name, A... args) {
  T v{};
  J e;
  return Call(&e, name, args..., &v) ? Num(static_cast<long long>(v)) : e;
}
std::string Hex(unsigned long long v, int width) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%0*llx", width, v);
  return b;
}

J PciJson(const nvmlPciInfo_t& p) {
  return O({{"busIdLegacy", Str(Cstr(p.busIdLegacy, sizeof p.busIdLegacy))},
            {"busId", Str(Cstr(p.busId, sizeof p.busId))},
            {"domain", Num(p.domain)},
            {"bus", Num(p.bus)},
            {"device", Num(p.device)},
            {"pciDeviceId", Str(Hex(p.pciDeviceId, 8))},
            {"pciSubSystemId", Str(Hex(p.pciSubSystemId, 8))}});
}

// ---- Files ----
J ReadFirstLine(const std::string& path) {
  errno = 0;
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) {
    return Err(std::strerror(errno ? errno : EIO));
  }
  return Str(line);
}
// sysfs attributes of PCI function `bdf`: the first three only, or all when `full`.
J SysfsPci(const std::string& bdf, bool full, std::string* real = nullptr) {
  // clang-format off
  static const char* kAttrs[] = {"vendor", "device", "class", "subsystem_vendor", "subsystem_device",
      "numa_node", "local_cpulist", "current_link_speed", "current_link_width", "max_link_speed",
      "max_link_width"};
  // clang-format on
  std::string dir = "/sys/bus/pci/devices/" + bdf;
  char buf[PATH_MAX];
  bool ok = realpath(dir.c_str(), buf) != nullptr;
  int saved_errno = errno;
  if (ok && real) {
    *real = buf;
  }
  J o = O({{"bdf", Str(bdf)}, {"realpath", ok ? Str(buf) : Err(std::strerror(saved_errno))}});
  for (size_t i = 0; i < (full ? std::size(kAttrs) : 3); ++i) {
    o.Set(kAttrs[i], ReadFirstLine(dir + "/" + kAttrs[i]));
  }
  return o;
}
// The PCI functions on the sysfs path from the root complex down to `self` (excluded).
J Ancestors(const std::string& path, const std::string& self) {
  J arr = Arr();
  size_t pos = 0;
  while (pos < path.size()) {
    size_t next = path.find('/', pos + 1);
    std::string part = path.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    unsigned d, b, s, f;
    if (part.size() == 12 && part != self &&
        std::sscanf(part.c_str(), "%4x:%2x:%2x.%1x", &d, &b, &s, &f) == 4) {
      arr.Push(SysfsPci(part, false));
    }
    pos = next;
  }
  return arr;
}
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') {
        names.emplace_back(e->d_name);
      }
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}
// Entries of `dir` named `prefix`*, with type, mode and major:minor; descends two levels.
void DevNodes(const std::string& dir, const std::string& prefix, J& arr, int depth) {
  for (const std::string& n : ListDir(dir)) {
    std::string path = dir;
    path += "/" + n;
    struct stat st;
    if (n.rfind(prefix, 0) != 0 || lstat(path.c_str(), &st) != 0) {
      continue;
    }
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    bool chr = S_ISCHR(st.st_mode), dir_entry = S_ISDIR(st.st_mode);
    J o = O({{"path", Str(path)},
             {"type", Str(chr                   ? "char"
                          : dir_entry           ? "dir"
                          : S_ISLNK(st.st_mode) ? "symlink"
                                                : "other")},
             {"mode", Str(mode)}});
    if (chr) {
      o.Set("rdev",
            Str(std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev))));
    }
    arr.Push(std::move(o));
    if (dir_entry && depth < 2) {
      DevNodes(path, "", arr, depth + 1);
    }
  }
}

// ---- Per device ----
J Device(unsigned i) {
  J d = O({{"index", Num(i)}}), e;
  nvmlDevice_t dev = nullptr;
  if (!Call(&e, "nvmlDeviceGetHandleByIndex_v2", i, &dev)) {
    return d.Set("handle", e);
  }
  d.Set("name", GetString("nvmlDeviceGetName", dev));
  d.Set("uuid", GetString("nvmlDeviceGetUUID", dev));
  d.Set("serial", GetString("nvmlDeviceGetSerial", dev));
  d.Set("boardPartNumber", GetString("nvmlDeviceGetBoardPartNumber", dev));
  d.Set("vbiosVersion", GetString("nvmlDeviceGetVbiosVersion", dev));
  d.Set("brand", GetNum<int>("nvmlDeviceGetBrand", dev));
  d.Set("architecture", GetNum<unsigned>("nvmlDeviceGetArchitecture", dev));
  d.Set("minorNumber", GetNum<unsigned>("nvmlDeviceGetMinorNumber", dev));
  d.Set("numaNodeId", GetNum<unsigned>("nvmlDeviceGetNumaNodeId", dev));
  int cc_major = 0, cc_minor = 0;
  bool ok = Call(&e, "nvmlDeviceGetCudaComputeCapability", dev, &cc_major, &cc_minor);
  d.Set("cudaComputeCapability", ok ? O({{"major", Num(cc_major)}, {"minor", Num(cc_minor)}}) : e);
  unsigned mig = 0, mig_pending = 0;
  ok = Call(&e, "nvmlDeviceGetMigMode", dev, &mig, &mig_pending);
  d.Set("migMode", ok ? O({{"current", Num(mig)}, {"pending", Num(mig_pending)}}) : e);
  nvmlMemory_t m{};
  ok = Call(&e, "nvmlDeviceGetMemoryInfo", dev, &m);
  d.Set("memory",
        ok ? O({{"total", Num(m.total)}, {"free", Num(m.free)}, {"used", Num(m.used)}}) : e);
  nvmlMemory_v2_t m2{};
  m2.version = static_cast<unsigned>(sizeof m2) | (2u << 24);  // NVML_STRUCT_VERSION(Memory, 2)
  ok = Call(&e, "nvmlDeviceGetMemoryInfo_v2", dev, &m2);
  d.Set("memoryV2", ok ? O({{"total", Num(m2.total)},
                            {"reserved", Num(m2.reserved)},
                            {"free", Num(m2.free)},
                            {"used", Num(m2.used)}})
                       : e);
  nvmlPciInfo_t pci{};
  bool have_pci = Call(&e, "nvmlDeviceGetPciInfo_v3", dev, &pci);
  d.Set("pci", have_pci ? PciJson(pci) : e);
  // NVLink: probe links until the first INVALID_ARGUMENT / NOT_SUPPORTED (or a missing symbol).
  J links = Arr(), stop;
  unsigned n = 0;
  for (; n < kMaxLinks; ++n) {
    int active = 0;
    nvmlReturn_t rc = CallRc(&e, "nvmlDeviceGetNvLinkState", dev, n, &active);
    if (rc == -1 || rc == kInvalidArgument || rc == kNotSupported) {
      stop = O({{"link", Num(n)}, {"result", e}});
      break;
    }
    nvmlPciInfo_t rp{};
    ok = Call(&e, "nvmlDeviceGetNvLinkRemotePciInfo_v2", dev, n, &rp);
    links.Push(O({{"link", Num(n)},
                  {"isActive", rc == 0 ? Num(active) : ErrRc(rc)},
                  {"version", GetNum<unsigned>("nvmlDeviceGetNvLinkVersion", dev, n)},
                  {"remoteDeviceType", GetNum<int>("nvmlDeviceGetNvLinkRemoteDeviceType", dev, n)},
                  {"remotePciBusId", ok ? Str(Cstr(rp.busId, sizeof rp.busId)) : e}}));
  }
  d.Set("nvlink", O({{"linksProbed", Num(n)}, {"stoppedAt", stop}, {"links", links}}));
  nvmlGpuFabricInfo_t fi{};
  if (Call(&e, "nvmlDeviceGetGpuFabricInfo", dev, &fi)) {
    std::string uuid;
    for (unsigned char c : fi.clusterUuid) {
      uuid += Hex(c, 2).substr(2);
    }
    d.Set("fabric", O({{"clusterUuid", Str(uuid)},
                       {"status", fi.status == 0 ? Str("Success") : ErrRc(fi.status)},
                       {"cliqueId", Num(fi.cliqueId)},
                       {"state", Num(fi.state)}}));
  } else {
    d.Set("fabric", e);
  }
  if (!have_pci) {
    return d;
  }
  unsigned dom = 0, bus = 0, slot = 0, fn = 0;
  std::string bus_id = Cstr(pci.busId, sizeof pci.busId);
  if (std::sscanf(bus_id.c_str(), "%x:%x:%x.%x", &dom, &bus, &slot, &fn) != 4) {
    return d.Set("sysfs", Err("cannot parse busId " + bus_id));
  }
  char bdf[32];  // sysfs spells the domain with 4 hex digits, NVML with 8
  std::snprintf(bdf, sizeof bdf, "%04x:%02x:%02x.%x", dom, bus, slot, fn);
  std::string real;
  J s = SysfsPci(bdf, true, &real);
  return d.Set("sysfs", s.Set("ancestors", Ancestors(real, bdf)));
}

int Run() {
  J doc = O({{"probe", Str("nvml-probe")}, {"schemaVersion", Num(1)}}), e;
  int exit_code = 0;
  g_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  void* init = g_lib ? dlsym(g_lib, "nvmlInit_v2") : nullptr;
  Dl_info info{};
  if (init && dladdr(init, &info) && info.dli_fname) {
    doc.Set("library", Str(info.dli_fname));
  }
  if (!init) {
    const char* why = dlerror();
    doc.Set("nvml", Str("unavailable")).Set("error", Str(why ? why : "nvmlInit_v2 missing"));
    exit_code = 3;
  } else if (!Call(&e, "nvmlInit_v2")) {
    doc.Set("nvml", Str("init-failed"));
    for (size_t k = 0; k < e.vals.size(); ++k) {
      doc.Set(e.keys[k], e.vals[k]);  // error, code
    }
    exit_code = 4;
  } else {
    doc.Set("nvml", Str("ok"));
    J sys = O({{"driverVersion", GetString("nvmlSystemGetDriverVersion")},
               {"nvmlVersion", GetString("nvmlSystemGetNVMLVersion")}});
    int cuda = 0;
    bool ok = Call(&e, "nvmlSystemGetCudaDriverVersion_v2", &cuda);
    std::string cuda_text = std::to_string(cuda / 1000) + "." + std::to_string(cuda % 1000 / 10);
    doc.Set("system", sys.Set("cudaDriverVersion",
                              ok ? O({{"raw", Num(cuda)}, {"version", Str(cuda_text)}}) : e));
    unsigned count = 0;
    if (Call(&e, "nvmlDeviceGetCount_v2", &count)) {
      J devs = Arr();
      for (unsigned i = 0; i < count && i < 64; ++i) {
        devs.Push(Device(i));
      }
      doc.Set("deviceCount", Num(count)).Set("devices", devs);
    } else {
      doc.Set("deviceCount", e);
    }
    doc.Set("shutdown", Call(&e, "nvmlShutdown") ? Str("ok") : e);
  }
  doc.Set("procDriverVersion", ReadFirstLine("/proc/driver/nvidia/version"));
  J nodes = Arr();
  DevNodes("/dev", "nvidia", nodes, 0);
  doc.Set("devNodes", nodes);
  J nv = Arr();  // every NVIDIA PCI function: GPUs, NVSwitches, audio functions, bridges
  for (const std::string& bdf : ListDir("/sys/bus/pci/devices")) {
    if (ReadFirstLine("/sys/bus/pci/devices/" + bdf + "/vendor").raw == "\"0x10de\"") {
      nv.Push(SysfsPci(bdf, false));
    }
  }
  doc.Set("pciNvidia", nv);
  std::string out;
  Write(doc, out, 0);
  std::fputs((out + "\n").c_str(), stdout);
  std::fflush(stdout);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "usage: nvml-probe\n"
        "Loads NVML with dlopen(\"libnvidia-ml.so.1\") (point LD_LIBRARY_PATH at e.g.\n"
        "/usr/local/nvidia/lib64) and prints what NVML and sysfs report about each GPU as JSON.\n"
        "Exit 0 when NVML initialised, 3 when the library or nvmlInit_v2 is missing, 4 when\n"
        "nvmlInit_v2 fails.\n");
    return 0;
  }
  try {
    return Run();
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "nvml-probe: internal error: %s\n", ex.what());
  } catch (...) {
    std::fprintf(stderr, "nvml-probe: internal error\n");
  }
  return 1;
}
