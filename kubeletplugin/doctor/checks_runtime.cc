// The checklist's runtime checks (internal/checks.h): 6. container runtime and CDI spec dirs,
// 7. kubelet, 8. support matrix.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"
#include "kubeletplugin/discovery/versions.h"
#include "kubeletplugin/doctor/internal/checks.h"

namespace xpu::doctor::internal {

using discovery::HostRoot;

namespace {
namespace checks_runtime_cc {

// {major, minor} of a version string ("v1.34.1", "1.7.24-1", "2.0.0~rc"), through the
// discovery's normalisation; nullopt when it has none.
std::optional<std::pair<int, int>> MajorMinor(std::string_view raw) {
  if (raw.starts_with("v")) raw.remove_prefix(1);
  const std::string semver = discovery::NormalizeSemver(raw);
  if (semver.empty()) return std::nullopt;
  std::pair<int, int> v;
  const char* p = semver.data();
  const char* end = semver.data() + semver.size();
  auto r = std::from_chars(p, end, v.first);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') return std::nullopt;
  r = std::from_chars(r.ptr + 1, end, v.second);
  if (r.ec != std::errc()) return std::nullopt;
  return v;
}

bool AtLeast(const std::pair<int, int>& v, int major, int minor) {
  return v >= std::pair{major, minor};
}

// What a release from 1.34 serves, by minor (docs/reference/kubernetes-1.38.md §2, §5):
// resource.k8s.io v1, with v1beta2 (deprecated in 1.36, removed in 1.39) and v1beta1 (deprecated
// in 1.35, removed in 1.38) served only when the API server opts in (--runtime-config); the
// kubelet's DRA gRPC v1 and v1beta1, through 1.38 at least.
std::string ApisOfRelease(int minor) {
  std::string apis = "resource.k8s.io v1";
  if (minor <= 37) {
    apis += " (v1beta2 and v1beta1 opt-in)";
  } else if (minor == 38) {
    apis += " (v1beta2 opt-in; v1beta1 removed in 1.38)";
  } else {
    apis += " (v1beta2 and v1beta1 removed)";
  }
  return apis + "; DRA gRPC v1, v1beta1";
}

// The Version of the first installed package of `names` in the dpkg database
// (var/lib/dpkg/status), with any epoch ("1:") dropped; "" when none is installed.
std::string DpkgVersion(std::string_view status_text, std::initializer_list<std::string_view> names,
                        std::string* package) {
  std::string_view current;
  std::string_view version;
  bool installed = false;
  const auto flush = [&]() -> std::string {
    const bool wanted = std::find(names.begin(), names.end(), current) != names.end();
    if (!wanted || !installed || version.empty()) return "";
    if (package) *package = std::string(current);
    const size_t colon = version.find(':');
    return std::string(colon == std::string_view::npos ? version : version.substr(colon + 1));
  };
  size_t start = 0;
  while (start <= status_text.size()) {
    const size_t nl = std::min(status_text.find('\n', start), status_text.size());
    const std::string_view line = status_text.substr(start, nl - start);
    start = nl + 1;
    if (Trim(line).empty()) {  // end of a stanza
      if (std::string v = flush(); !v.empty()) return v;
      current = version = "";
      installed = false;
      if (nl == status_text.size()) break;
      continue;
    }
    if (line.starts_with("Package:")) current = Trim(line.substr(8));
    if (line.starts_with("Version:")) version = Trim(line.substr(8));
    if (line.starts_with("Status:")) installed = line.ends_with(" installed");
  }
  return flush();
}

struct ContainerdConfig {
  bool found = false;
  int version = 1;                 // the config file's own `version`
  std::optional<bool> enable_cdi;  // under the CRI plugin
  std::string section;             // where enable_cdi was read
};

ContainerdConfig ReadContainerdConfig(std::string_view text) {
  ContainerdConfig c;
  c.found = true;
  std::string_view section;
  for (std::string_view line : Lines(text)) {
    if (line.starts_with("[")) {
      section = line;
      continue;
    }
    const auto kv = SplitAssignment(line);
    if (!kv) continue;
    if (section.empty() && kv->first == "version") {
      int v = 0;
      std::from_chars(kv->second.data(), kv->second.data() + kv->second.size(), v);
      c.version = v;
    }
    // The CRI plugin: io.containerd.grpc.v1.cri (config version 2, containerd 1.x) or
    // io.containerd.cri.v1.runtime (version 3, containerd 2.x).
    const bool cri = section.find("io.containerd.grpc.v1.cri\"]") != std::string_view::npos ||
                     section.find("io.containerd.cri.v1.runtime\"]") != std::string_view::npos;
    if (cri && kv->first == "enable_cdi") {
      c.enable_cdi = kv->second == "true";
      c.section = std::string(section);
    }
  }
  return c;
}

// The CRI-O config files that exist: etc/crio/crio.conf and etc/crio/crio.conf.d/*.
std::vector<std::string> CrioConfigs(const HostRoot& host) {
  std::vector<std::string> files;
  if (host.Exists("etc/crio/crio.conf")) files.emplace_back("/etc/crio/crio.conf");
  if (StatusOr<std::vector<std::string>> names = host.List("etc/crio/crio.conf.d"); names.ok()) {
    for (const std::string& n : *names) files.push_back("/etc/crio/crio.conf.d/" + n);
  }
  return files;
}

}  // namespace checks_runtime_cc
}  // namespace

// ---- 6. container runtime and CDI ----

CheckResult CheckContainerRuntime(const HostRoot& host, const std::string& dpkg) {
  std::string package;
  const std::string containerd_version =
      checks_runtime_cc::DpkgVersion(dpkg, {"containerd.io", "containerd"}, &package);
  StatusOr<std::string> toml = host.ReadFile("etc/containerd/config.toml");
  if (toml.ok() || !containerd_version.empty()) {
    const checks_runtime_cc::ContainerdConfig config =
        toml.ok() ? checks_runtime_cc::ReadContainerdConfig(*toml)
                  : checks_runtime_cc::ContainerdConfig{};
    std::string evidence = "containerd " + (containerd_version.empty()
                                                ? std::string("version unknown")
                                                : containerd_version + " (dpkg " + package + ")");
    evidence += "; /etc/containerd/config.toml: ";
    if (!config.found) {
      evidence += "absent";
    } else {
      evidence += "version " + std::to_string(config.version) + ", enable_cdi " +
                  (config.enable_cdi ? (*config.enable_cdi ? "true" : "false") : "not set");
    }
    const std::optional<std::pair<int, int>> v = checks_runtime_cc::MajorMinor(containerd_version);
    const bool v2 =
        v ? checks_runtime_cc::AtLeast(*v, 2, 0) : config.version >= 3;  // only 2.x reads version 3
    if (v && !checks_runtime_cc::AtLeast(*v, 1, 7)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "containerd before 1.7 has no CDI: upgrade to 1.7 or later (2.x preferred)");
    }
    if (config.enable_cdi == false || (!v2 && config.enable_cdi != true)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "set enable_cdi = true under [plugins.\"io.containerd.grpc.v1.cri\"] in "
                    "/etc/containerd/config.toml and restart containerd");
    }
    if (!v) {
      return Result("container-runtime", CheckStatus::kWarn, evidence,
                    "containerd's version is not in the dpkg database: check `containerd "
                    "--version` is 1.7 or later");
    }
    return Result("container-runtime", CheckStatus::kPass, evidence);
  }
  const std::string crio_version =
      checks_runtime_cc::DpkgVersion(dpkg, {"cri-o", "crio"}, &package);
  const std::vector<std::string> crio = checks_runtime_cc::CrioConfigs(host);
  if (!crio.empty() || !crio_version.empty()) {
    std::string evidence = "CRI-O " +
                           (crio_version.empty() ? std::string("version unknown") : crio_version) +
                           "; config: " + (crio.empty() ? std::string("absent") : Join(crio, ", "));
    const std::optional<std::pair<int, int>> v = checks_runtime_cc::MajorMinor(crio_version);
    if (!v) {
      return Result("container-runtime", CheckStatus::kWarn, evidence,
                    "CRI-O's version is not in the dpkg database: check `crio version` is 1.28 "
                    "or later");
    }
    if (!checks_runtime_cc::AtLeast(*v, 1, 28)) {
      return Result("container-runtime", CheckStatus::kFail, evidence,
                    "upgrade CRI-O to 1.28 or later");
    }
    return Result("container-runtime", CheckStatus::kPass, evidence + " (CDI on by default)");
  }
  return Result("container-runtime", CheckStatus::kFail,
                "no /etc/containerd/config.toml, no /etc/crio/crio.conf(.d), neither package in "
                "/var/lib/dpkg/status",
                "install containerd 1.7+ with CDI enabled, or CRI-O 1.28+");
}

CheckResult CheckCdiSpecDirs(const HostRoot& host) {
  std::vector<std::string> seen;
  CheckStatus status = CheckStatus::kPass;
  for (const std::string_view dir : {"etc/cdi", "var/run/cdi"}) {
    StatusOr<std::string> resolved = host.Resolve(dir);
    const std::string path = host.root() + "/" + (resolved.ok() ? *resolved : "");
    struct stat st {};
    if (!resolved.ok() || ::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      seen.push_back("/" + std::string(dir) + " missing");
      if (status == CheckStatus::kPass) status = CheckStatus::kWarn;
    } else if (::access(path.c_str(), W_OK) != 0) {
      seen.push_back("/" + std::string(dir) + " not writable");
      status = CheckStatus::kFail;
    } else {
      seen.push_back("/" + std::string(dir) + " writable");
    }
  }
  return Result(
      "cdi-spec-dirs", status, Join(seen, ", "),
      status == CheckStatus::kFail
          ? "the plugin writes CDI specs to /var/run/cdi (--cdi-dir): make it writable"
          : "the plugin's hostPath volume creates /var/run/cdi; the runtime must read the "
            "same directory (its default CDI spec dirs are /etc/cdi and /var/run/cdi)");
}

// ---- 7. kubelet ----

CheckResult CheckKubelet(const DoctorOptions& options, const std::string& dpkg) {
  std::string raw = options.kubelet_version;
  std::string source = "--kubelet-version";
  if (raw.empty()) {
    std::string package;
    raw = checks_runtime_cc::DpkgVersion(dpkg, {"kubelet"}, &package);
    source = "dpkg kubelet";
  }
  if (raw.empty()) {
    return Result("kubelet", CheckStatus::kWarn,
                  "kubelet version unknown (no kubelet package in /var/lib/dpkg/status)",
                  "pass --kubelet-version (see `kubelet --version`)");
  }
  const std::optional<std::pair<int, int>> v = checks_runtime_cc::MajorMinor(raw);
  if (!v) {
    return Result("kubelet", CheckStatus::kWarn, source + ": \"" + raw + "\" is not a version",
                  "pass --kubelet-version as 1.34.1");
  }
  std::string evidence = "kubelet " + raw + " (" + source + ")";
  // resource.k8s.io: v1beta1 from 1.32, v1beta2 from 1.33, v1 from 1.34 (docs/architecture.md);
  // the kubelet's DRA gRPC: v1beta1 from 1.32, v1 from 1.34.
  if (!checks_runtime_cc::AtLeast(*v, 1, 32)) {
    return Result("kubelet", CheckStatus::kFail, evidence + ": no DRA beta API",
                  "upgrade the kubelet to 1.34 or later (the plugin needs DRA v1beta1 at least)");
  }
  if (!checks_runtime_cc::AtLeast(*v, 1, 34)) {
    return Result("kubelet", CheckStatus::kWarn,
                  evidence + ": resource.k8s.io v1beta1" +
                      (checks_runtime_cc::AtLeast(*v, 1, 33) ? ", v1beta2" : "") +
                      "; DRA gRPC v1beta1",
                  "the project supports Kubernetes 1.34 to 1.38: upgrade the kubelet");
  }
  return Result("kubelet", CheckStatus::kPass,
                evidence + ": " + checks_runtime_cc::ApisOfRelease(v->second));
}

// ---- 8. support matrix ----

CheckResult CheckSupportMatrix(const DoctorOptions& options, const Facts& facts) {
  if (!options.support) {
    return Result("support-matrix", CheckStatus::kSkip, "no support matrix given");
  }
  const auto& devices = facts.inventory.status.devices;
  if (devices.empty()) return Result("support-matrix", CheckStatus::kSkip, "no accelerator found");
  std::vector<std::string> outside;
  for (const auto& d : devices) {
    const SupportJudgement j = options.support(d);
    if (!j.supported) outside.push_back(d.name + ": " + j.reason);
  }
  const std::string from =
      options.support_source.empty() ? "" : " (" + options.support_source + ")";
  if (!outside.empty()) {
    return Result("support-matrix", CheckStatus::kFail,
                  std::to_string(outside.size()) + " of " + std::to_string(devices.size()) +
                      " devices outside the support matrix" + from + ": " + Join(outside, "; "),
                  "the controller taints these devices xpu.dra.dev/unsupported: upgrade the "
                  "driver, firmware or toolkit, or widen the matrix");
  }
  return Result("support-matrix", CheckStatus::kPass,
                std::to_string(devices.size()) + " devices inside the support matrix" + from);
}

}  // namespace xpu::doctor::internal
