#include "e2e/kubesim/tls.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string_view>
#include <vector>

#include "base/text.h"

namespace xpu::kubesim {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;
using Ext = std::unique_ptr<X509_EXTENSION, Free>;

Status TlsError(const std::string& what) { return InternalError("generate tls material: " + what); }

std::string Drain(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  Ext ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return TlsError(std::string("add extension ") + value);
  }
  return OkStatus();
}

// A certificate for `key` named `cn` (and organization `org` when not null), signed by
// `issuer_key` (self-signed when `issuer` is null).
StatusOr<Cert> MakeCert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key,
                        const std::vector<std::pair<int, const char*>>& extensions,
                        const char* org = nullptr) {
  Cert cert(X509_new());
  if (!cert) return TlsError("allocate certificate");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return TlsError("random serial");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 7L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (org != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org),
                               -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(signer));
  for (const auto& [nid, value] : extensions) {
    RETURN_IF_ERROR(AddExtension(cert.get(), signer, nid, value));
  }
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return TlsError("sign " + std::string(cn));
  }
  return cert;
}

StatusOr<std::string> CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return TlsError("encode certificate");
  return Drain(bio.get());
}

StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return TlsError("encode private key");
  }
  return Drain(bio.get());
}

}  // namespace

StatusOr<TlsMaterial> GenerateTlsMaterial() {
  Key ca_key(EVP_EC_gen("P-256"));
  Key server_key(EVP_EC_gen("P-256"));
  if (!ca_key || !server_key) return TlsError("generate P-256 keys");
  ASSIGN_OR_RETURN(Cert ca, MakeCert(ca_key.get(), "kube-sim-ca", nullptr, ca_key.get(),
                                     {{NID_basic_constraints, "critical,CA:TRUE"},
                                      {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                      {NID_subject_key_identifier, "hash"}}));
  ASSIGN_OR_RETURN(Cert server, MakeCert(server_key.get(), "kube-sim", ca.get(), ca_key.get(),
                                         {{NID_basic_constraints, "critical,CA:FALSE"},
                                          {NID_key_usage, "critical,digitalSignature"},
                                          {NID_ext_key_usage, "serverAuth"},
                                          {NID_authority_key_identifier, "keyid:always"},
                                          {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"}}));
  TlsMaterial out;
  ASSIGN_OR_RETURN(out.ca_cert_pem, CertPem(ca.get()));
  ASSIGN_OR_RETURN(out.server_cert_pem, CertPem(server.get()));
  ASSIGN_OR_RETURN(out.server_key_pem, KeyPem(server_key.get()));
  ASSIGN_OR_RETURN(out.ca_key_pem, KeyPem(ca_key.get()));
  return out;
}

StatusOr<ClientCertificate> IssueClientCertificate(const TlsMaterial& material,
                                                   const std::string& common_name,
                                                   const std::string& organization) {
  Bio ca_bio(
      BIO_new_mem_buf(material.ca_cert_pem.data(), static_cast<int>(material.ca_cert_pem.size())));
  Bio key_bio(
      BIO_new_mem_buf(material.ca_key_pem.data(), static_cast<int>(material.ca_key_pem.size())));
  if (!ca_bio || !key_bio) return TlsError("read CA");
  Cert ca(PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr));
  Key ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (!ca || !ca_key) return TlsError("read CA certificate and key");
  Key key(EVP_EC_gen("P-256"));
  if (!key) return TlsError("generate P-256 key");
  ASSIGN_OR_RETURN(Cert cert, MakeCert(key.get(), common_name.c_str(), ca.get(), ca_key.get(),
                                       {{NID_basic_constraints, "critical,CA:FALSE"},
                                        {NID_key_usage, "critical,digitalSignature"},
                                        {NID_ext_key_usage, "clientAuth"},
                                        {NID_authority_key_identifier, "keyid:always"}},
                                       organization.empty() ? nullptr : organization.c_str()));
  ClientCertificate out;
  ASSIGN_OR_RETURN(out.cert_pem, CertPem(cert.get()));
  ASSIGN_OR_RETURN(out.key_pem, KeyPem(key.get()));
  return out;
}

StatusOr<std::string> RandomHex(int bytes) {
  std::vector<unsigned char> buf(static_cast<size_t>(bytes));
  if (RAND_bytes(buf.data(), bytes) != 1) return InternalError("generate random token: RAND_bytes");
  return HexEncode(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace xpu::kubesim
