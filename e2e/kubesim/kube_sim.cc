#include "e2e/kubesim/kube_sim.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "api/validation.h"
#include "base/flags.h"
#include "e2e/kubesim/resources.h"

namespace xpu::kubesim {
namespace {

template <typename T>
StatusOr<T> ParseNumber(const std::string& flag, const std::string& value) {
  std::istringstream in(value);
  T v{};
  if (!(in >> v) || !in.eof()) {
    return InvalidArgumentError("parse flag " + flag + ": \"" + value + "\" is not a number");
  }
  return v;
}

// The value as a T (ParseNumber).
template <typename T>
FlagSetter NumberFlag(T* out) {
  return [out](FlagReader& flags) -> Status {
    ASSIGN_OR_RETURN(const std::string v, flags.Value());
    ASSIGN_OR_RETURN(*out, ParseNumber<T>(flags.flag(), v));
    return OkStatus();
  };
}

}  // namespace

Status Options::Validate() const {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == listen.size()) {
    return InvalidArgumentError("validate --listen \"" + listen + "\": want HOST:PORT");
  }
  if (history < 1) return InvalidArgumentError("validate --history: must be at least 1");
  if (faults.rate < 0 || faults.rate > 1) {
    return InvalidArgumentError("validate --fault-rate: must be in [0, 1]");
  }
  for (int code : faults.codes) {
    if (code != 409 && code != 429 && code != 500 && code != 503) {
      return InvalidArgumentError("validate --fault-codes: " + std::to_string(code) +
                                  " is not one of 409, 429, 500, 503");
    }
  }
  if (faults.rate > 0 && faults.codes.empty()) {
    return InvalidArgumentError("validate --fault-codes: empty while --fault-rate is set");
  }
  if (faults.drop_rate < 0 || faults.drop_rate > 1) {
    return InvalidArgumentError("validate --drop-rate: must be in [0, 1]");
  }
  if (faults.watch_close_after < 0 || faults.watch_close_after_ms < 0 || faults.latency_ms < 0) {
    return InvalidArgumentError(
        "validate --watch-close-after, --watch-close-after-ms, --latency-ms: must not be negative");
  }
  {
    std::vector<ResourceType> types = BuiltinResources();
    if (Status s = ServeResourceVersions(&types, resource_versions); !s.ok()) {
      return InvalidArgumentError("validate --resource-versions: " + s.message());
    }
  }
  if (kube_version != "1.34" && kube_version != "1.35") {
    return InvalidArgumentError("validate --kube-version \"" + kube_version +
                                "\": want 1.34 or 1.35");
  }
  return OkStatus();
}

namespace {

std::vector<Flag> KubeSimFlags(Options* o) {
  return {
      {"--listen", "HOST:PORT", "address to serve on (default 127.0.0.1:0, a free port)",
       StringFlag(&o->listen)},
      {"--kubeconfig-out", "FILE", "write a kubeconfig (mode 0600) once listening",
       StringFlag(&o->kubeconfig_out)},
      {"--token", "TOKEN", "bearer token to accept (default: random)", StringFlag(&o->token)},
      {"--history", "N", "watch event history (default 1000); older -> 410",
       NumberFlag(&o->history)},
      {"--seed", "N", "seed for uids, generated names and faults", NumberFlag(&o->seed)},
      {"--fault-rate", "F", "fail this share of non-watch requests (default 0)",
       NumberFlag(&o->faults.rate)},
      {"--fault-codes", "LIST",
       "codes to fail with, from 409,429,500,503 (default 409,429,500);\n"
       "429 and 503 carry Retry-After: 1",
       [o](FlagReader& flags) -> Status {
         ASSIGN_OR_RETURN(const std::string v, flags.Value());
         o->faults.codes.clear();
         std::istringstream in(v);
         for (std::string item; std::getline(in, item, ',');) {
           ASSIGN_OR_RETURN(int code, ParseNumber<int>(flags.flag(), item));
           o->faults.codes.push_back(code);
         }
         return OkStatus();
       }},
      {"--drop-rate", "F",
       "close the connection without an answer for this share of\n"
       "resource requests, watches included (default 0)",
       NumberFlag(&o->faults.drop_rate)},
      {"--watch-close-after", "N", "end every watch after N events (default 0: never)",
       NumberFlag(&o->faults.watch_close_after)},
      {"--watch-close-after-ms", "M", "end every watch after M ms (default 0: never)",
       NumberFlag(&o->faults.watch_close_after_ms)},
      {"--latency-ms", "N",
       "delay every resource request by N ms (default 0)\n"
       "(faults change at run time: POST /kube-sim/faults with\n"
       "{rate, codes, dropRate, watchCloseAfter, watchCloseAfterMs,\n"
       "latencyMs, seed}; GET shows them)",
       NumberFlag(&o->faults.latency_ms)},
      {"--kube-version", "V", "1.34 or 1.35 (default): validation limits and /version",
       ValueFlag([o](const std::string& v) -> Status {
         const auto parsed = api::ParseKubeVersion(v);
         if (!parsed) {
           return InvalidArgumentError("parse flag --kube-version: \"" + v +
                                       "\" is not 1.34 or 1.35");
         }
         o->kube_version = std::string(api::KubeVersionName(*parsed));
         return OkStatus();
       })},
      {"--resource-versions", "LIST",
       "resource.k8s.io versions to serve, preferred first (default\n"
       "v1,v1beta2,v1beta1; v1beta1 alone acts as a 1.32 cluster)",
       ValueFlag([o](const std::string& v) {
         o->resource_versions.clear();
         std::istringstream in(v);
         for (std::string item; std::getline(in, item, ',');) o->resource_versions.push_back(item);
         return OkStatus();
       })},
      {"--client-kubeconfig-out", "FILE",
       "also write a kubeconfig (0600) with a client\n"
       "certificate (CN xpu-dra-test, O system:masters) signed by\n"
       "the CA",
       StringFlag(&o->client_kubeconfig_out)},
      {"--feature-gates", "LIST",
       "API server feature gates, Gate=bool,... (default: all true):\n"
       "DRADeviceTaints, DRAPartitionableDevices, DRAPartitionableDevicesType,\n"
       "DRAConsumableCapacity, DRADeviceBindingConditions; writes\n"
       "drop the ResourceSlice fields of disabled gates, as a real\n"
       "1.34/1.35 cluster (all alpha, off) does. At run time:\n"
       "POST /kube-sim/feature-gates {\"DRADeviceTaints\": false}",
       ValueFlag([o](const std::string& v) -> Status {
         if (Status s = ParseFeatureGates(v, &o->feature_gates); !s.ok()) {
           return InvalidArgumentError("parse flag --feature-gates: " + s.message());
         }
         return OkStatus();
       })},
  };
}

}  // namespace

std::string Usage() {
  Options unused;
  return "usage: kube-sim [flags]\n"
         "A local Kubernetes API server over HTTPS for tests.\n" +
         FlagTableUsage(KubeSimFlags(&unused), 25);
}

StatusOr<Options> ParseFlags(const std::vector<std::string>& args, bool* help) {
  Options o;
  ASSIGN_OR_RETURN(*help, ParseFlagTable(args, KubeSimFlags(&o)));
  if (*help) return o;
  RETURN_IF_ERROR(o.Validate());
  return o;
}

namespace {

// A kubeconfig with the one cluster kube-sim, the user `user` with the credential lines `auth`
// (indented under "user:"), and the context kube-sim joining them.
std::string Kubeconfig(const std::string& server, const std::string& ca_pem_base64,
                       const std::string& user, const std::string& auth) {
  return "apiVersion: v1\n"
         "kind: Config\n"
         "clusters:\n"
         "- name: kube-sim\n"
         "  cluster:\n"
         "    server: " +
         server + "\n    certificate-authority-data: " + ca_pem_base64 +
         "\n"
         "users:\n"
         "- name: " +
         user + "\n  user:\n" + auth +
         "contexts:\n"
         "- name: kube-sim\n"
         "  context:\n"
         "    cluster: kube-sim\n"
         "    user: " +
         user +
         "\n"
         "current-context: kube-sim\n";
}

}  // namespace

std::string KubeconfigYaml(const std::string& server, const std::string& ca_pem_base64,
                           const std::string& token) {
  return Kubeconfig(server, ca_pem_base64, "kube-sim", "    token: " + token + "\n");
}

std::string ClientCertKubeconfigYaml(const std::string& server, const std::string& ca_pem_base64,
                                     const std::string& cert_pem_base64,
                                     const std::string& key_pem_base64) {
  return Kubeconfig(server, ca_pem_base64, "xpu-dra-test",
                    "    client-certificate-data: " + cert_pem_base64 +
                        "\n    client-key-data: " + key_pem_base64 + "\n");
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const char* step) {
    const std::string cause = std::strerror(errno);
    ::unlink(tmp.c_str());
    return InternalError("write " + path + ": " + step + ": " + cause);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return InternalError("write " + path + ": open: " + std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      ::close(fd);
      return fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("fsync");
  }
  if (::close(fd) != 0) return fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
  return OkStatus();
}

}  // namespace xpu::kubesim
