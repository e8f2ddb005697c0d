// Generated TLS material for kube-sim: a throw-away CA and a serving certificate for 127.0.0.1
// and localhost signed by it (EC P-256, SHA-256), made fresh at every start, and client
// certificates issued by the same CA.
#ifndef XPU_E2E_KUBESIM_TLS_H_
#define XPU_E2E_KUBESIM_TLS_H_

#include <string>

#include "base/status.h"

namespace xpu::kubesim {

struct TlsMaterial {
  std::string ca_cert_pem;
  std::string ca_key_pem;  // to issue client certificates
  std::string server_cert_pem;
  std::string server_key_pem;
};

StatusOr<TlsMaterial> GenerateTlsMaterial();

struct ClientCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// A client certificate (clientAuth) for `common_name` in `organization`, signed by the CA of
// `material`, as Kubernetes maps them to a user and a group.
StatusOr<ClientCertificate> IssueClientCertificate(const TlsMaterial& material,
                                                   const std::string& common_name,
                                                   const std::string& organization);

// `bytes` random bytes from the OpenSSL generator as lower-case hex.
StatusOr<std::string> RandomHex(int bytes);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_TLS_H_
