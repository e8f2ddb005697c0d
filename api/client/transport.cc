#include "api/client/transport.h"

#include <curl/curl.h>

#include <cctype>
#include <utility>

#include "base/mutex.h"

namespace xpu::api::client {
namespace {

struct CallState {
  const HttpCall* call = nullptr;
  HttpResult* result = nullptr;
  bool streaming = false;
  bool aborted_by_reader = false;
};

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<CallState*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A status line (there may be several, e.g. after "100 Continue"): stream 2xx bodies only.
    const auto sp = line.find(' ');
    state->streaming = state->call->on_data != nullptr && sp != std::string_view::npos &&
                       line.size() > sp + 1 && line[sp + 1] == '2';
    return n;
  }
  const auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    while (!value.empty() &&
           (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
      value.remove_suffix(1);
    }
    if (name == "retry-after") state->result->retry_after = std::string(value);
    if (name == "content-type") state->result->content_type = std::string(value);
  }
  return n;
}

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<CallState*>(user);
  const size_t n = size * count;
  if (state->streaming) {
    if (!state->call->on_data(std::string_view(data, n))) {
      state->aborted_by_reader = true;
      return 0;  // makes curl stop with CURLE_WRITE_ERROR
    }
    return n;
  }
  state->result->body.append(data, n);
  return n;
}

int OnProgress(void* user, curl_off_t /*dltotal*/, curl_off_t /*dlnow*/, curl_off_t /*ultotal*/,
               curl_off_t /*ulnow*/) {
  const auto* state = static_cast<CallState*>(user);
  const auto* stop = state->call->stop;
  return stop != nullptr && stop->load() ? 1 : 0;
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) != 0 || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4U]);
      out.push_back(kHex[u & 0xFU]);
    }
  }
  return out;
}

Transport::Transport(ClusterConfig config) : config_(std::move(config)), tokens_(config_) {}

StatusOr<std::unique_ptr<Transport>> Transport::Create(const ClusterConfig& config) {
  GlobalInit();
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return InvalidArgumentError("connect to \"" + config.server +
                                "\": server must be an https:// or http:// URL");
  }
  if (!config.tls_server_name.empty()) {
    return InvalidArgumentError("connect to " + config.server +
                                ": tls-server-name is not supported by this client");
  }
  return std::unique_ptr<Transport>(new Transport(config));
}

Transport::~Transport() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* Transport::Acquire() {
  {
    MutexLock lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void Transport::Release(void* handle) {
  MutexLock lock(mu_);
  if (idle_.size() < 16) {
    idle_.push_back(handle);
  } else {
    curl_easy_cleanup(static_cast<CURL*>(handle));
  }
}

StatusOr<HttpResult> Transport::Do(const HttpCall& call) {
  auto token = tokens_.Token();
  if (!token.ok()) return token.status();
  CURL* curl = static_cast<CURL*>(Acquire());
  if (curl == nullptr) return InternalError("curl_easy_init failed");
  curl_easy_reset(curl);

  HttpResult result;
  CallState state{&call, &result};
  const std::string url = config_.server + call.path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(curl, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(call.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(call.timeout.count()));
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &state);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &state);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, call.stop != nullptr ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, config_.insecure_skip_tls_verify ? 0L : 1L);
  curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, config_.insecure_skip_tls_verify ? 0L : 2L);
  curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
  if (!config_.ca_pem.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
  curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()), config_.client_cert_pem.size(),
                 CURL_BLOB_COPY};
  curl_blob key{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(),
                CURL_BLOB_COPY};
  if (!config_.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  const std::string auth = "Authorization: Bearer " + *token;
  if (!token->empty()) headers = curl_slist_append(headers, auth.c_str());
  if (!call.body.empty() || call.method == "POST" || call.method == "PUT") {
    headers = curl_slist_append(headers, "Content-Type: application/json");
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  if (call.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, call.method.c_str());
    if (!call.body.empty() || call.method == "POST" || call.method == "PUT") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(call.body.size()));
    }
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.code);
  curl_slist_free_all(headers);
  // Clear the blobs' references before the handle goes back to the pool.
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);

  if (rc != CURLE_OK) {
    Release(curl);
    const std::string detail = errbuf[0] != '\0' ? std::string(errbuf) : curl_easy_strerror(rc);
    const std::string where =
        call.method + " " + config_.server + call.path.substr(0, call.path.find('?'));
    if (state.aborted_by_reader || (call.stop != nullptr && call.stop->load())) {
      return Status(StatusCode::kCancelled, where + ": stopped");
    }
    switch (rc) {
      case CURLE_OPERATION_TIMEDOUT:
        return Status(StatusCode::kDeadlineExceeded, where + ": timed out: " + detail);
      case CURLE_PEER_FAILED_VERIFICATION:
      case CURLE_SSL_CERTPROBLEM:
      case CURLE_SSL_CIPHER:
      case CURLE_SSL_CACERT_BADFILE:
      case CURLE_SSL_ISSUER_ERROR:
      case CURLE_SSL_CRL_BADFILE:
        return FailedPreconditionError(where + ": TLS: " + detail);
      case CURLE_UNSUPPORTED_PROTOCOL:
      case CURLE_URL_MALFORMAT:
        return InvalidArgumentError(where + ": " + detail);
      default:
        return UnavailableError(where + ": " + detail);
    }
  }
  Release(curl);
  return result;
}

}  // namespace xpu::api::client
