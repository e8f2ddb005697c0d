// Generated TLS material for kube-sim: a throw-away CA and a serving certificate for 127.0.0.1
// and localhost signed by it (EC P-256, SHA-256), made fresh at every start.
#ifndef XPU_E2E_KUBESIM_TLS_H_
#define XPU_E2E_KUBESIM_TLS_H_

#include <string>

#include "base/status.h"

namespace xpu::kubesim {

struct TlsMaterial {
  std::string ca_cert_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
};

StatusOr<TlsMaterial> GenerateTlsMaterial();

// Standard base64 with padding (kubeconfig certificate-authority-data).
std::string Base64(const std::string& data);
// `bytes` random bytes from the OpenSSL generator as lower-case hex.
StatusOr<std::string> RandomHex(int bytes);

}  // namespace xpu::kubesim

#endif  // XPU_E2E_KUBESIM_TLS_H_
