#include "api/client/informer.h"

#include <charconv>
#include <utility>

namespace xpu::api::client {
namespace {

using nlohmann::json;

std::string ResourceVersionOf(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  return meta->value("resourceVersion", "");
}

std::optional<uint64_t> ParseRv(const std::string& rv) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), value);
  if (ec != std::errc() || end != rv.data() + rv.size() || rv.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int> CompareResourceVersions(const std::string& a, const std::string& b) {
  const auto x = ParseRv(a);
  const auto y = ParseRv(b);
  if (!x || !y) return std::nullopt;
  return *x < *y ? -1 : (*x > *y ? 1 : 0);
}

std::string KeyOf(const json& object) {
  const auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return "";
  const std::string ns = meta->value("namespace", "");
  const std::string name = meta->value("name", "");
  return ns.empty() ? name : ns + "/" + name;
}

InformerCore::InformerCore(Client* client, ResourceRef ref, InformerOptions options, Decode decode)
    : client_(client),
      ref_(std::move(ref)),
      options_(std::move(options)),
      decode_(std::move(decode)) {}

InformerCore::~InformerCore() { Stop(); }

void InformerCore::AddHandlers(Handlers handlers) { handlers_.push_back(std::move(handlers)); }

void InformerCore::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Run(); });
}

void InformerCore::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

bool InformerCore::WaitForSync(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return cv_.WaitFor(mu_, timeout, [this]() REQUIRES(mu_) { return synced_ || stop_.load(); }) &&
         synced_;
}

bool InformerCore::synced() const {
  MutexLock lock(mu_);
  return synced_;
}

InformerCore::Item InformerCore::Get(const std::string& key) const {
  MutexLock lock(mu_);
  const auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second.item;
}

std::vector<InformerCore::Item> InformerCore::List() const {
  MutexLock lock(mu_);
  std::vector<Item> out;
  out.reserve(cache_.size());
  for (const auto& [key, entry] : cache_) out.push_back(entry.item);
  return out;
}

std::string InformerCore::last_decode_error() const {
  MutexLock lock(mu_);
  return last_decode_error_;
}

InformerCore::Item InformerCore::DecodeOrCount(json&& object, const std::string& key) {
  auto decoded = decode_(std::move(object));
  if (decoded.ok()) return std::move(decoded).value();
  MutexLock lock(mu_);
  ++stats_.decode_errors;
  last_decode_error_ = "decode " + ref_.Name() + " " + key + ": " + decoded.status().message();
  return nullptr;
}

size_t InformerCore::size() const {
  MutexLock lock(mu_);
  return cache_.size();
}

std::string InformerCore::resource_version() const {
  MutexLock lock(mu_);
  return resource_version_;
}

InformerStats InformerCore::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

bool InformerCore::SleepFor(std::chrono::steady_clock::duration d) {
  MutexLock lock(mu_);
  return !cv_.WaitFor(mu_, d, [this]() REQUIRES(mu_) { return stop_.load(); });
}

void InformerCore::Run() {
  Backoff backoff(options_.error_backoff, std::random_device()());
  bool after_gone = false;
  // Started again after Stop: resume watching from where the cache is current.
  bool resume = synced() && !resource_version().empty();
  while (!stop_) {
    if (resume) {
      resume = false;
    } else if (Status listed = ListAndReplace(after_gone); !listed.ok()) {
      {
        MutexLock lock(mu_);
        ++stats_.errors;
      }
      if (!SleepFor(backoff.Next().value_or(options_.error_backoff.max))) return;
      continue;
    }
    after_gone = false;
    backoff = Backoff(options_.error_backoff, std::random_device()());
    while (!stop_) {
      const Status watched = WatchOnce();
      if (stop_) return;
      if (watched.code() == StatusCode::kOutOfRange) {
        after_gone = true;
        break;  // the resourceVersion is too old: relist
      }
      if (watched.ok()) {
        backoff = Backoff(options_.error_backoff, std::random_device()());
        continue;  // the server ended the stream: resume where it stopped
      }
      {
        MutexLock lock(mu_);
        ++stats_.errors;
      }
      if (!SleepFor(backoff.Next().value_or(options_.error_backoff.max))) return;
    }
  }
}

Status InformerCore::ListAndReplace(bool after_gone) {
  ListOptions list;
  list.label_selector = options_.label_selector;
  list.field_selector = options_.field_selector;
  list.limit = options_.page_size;
  // Page by page, decoding each page before the next is fetched: the JSON of the whole list is
  // never held at once (for typed informers it is several times the size of the decoded objects).
  std::map<std::string, Entry> fresh;
  std::string list_rv;
  while (true) {
    ASSIGN_OR_RETURN(ListPage page, client_->List(ref_, options_.ns, list));
    for (json& item : page.items) {
      std::string key = KeyOf(item);
      std::string rv = ResourceVersionOf(item);
      Item decoded = DecodeOrCount(std::move(item), key);
      if (decoded) fresh.insert_or_assign(std::move(key), Entry{std::move(rv), std::move(decoded)});
    }
    list_rv = page.resource_version;
    if (page.continue_token.empty()) break;
    list.continue_token = page.continue_token;
  }
  std::vector<Item> added;
  std::vector<std::pair<Item, Item>> updated;
  std::vector<Item> deleted;
  {
    MutexLock lock(mu_);
    for (const auto& [key, entry] : fresh) {
      const auto old = cache_.find(key);
      if (old == cache_.end()) {
        added.push_back(entry.item);
      } else if (old->second.resource_version != entry.resource_version) {
        updated.emplace_back(old->second.item, entry.item);
      }
    }
    for (const auto& [key, entry] : cache_) {
      if (fresh.find(key) == fresh.end()) deleted.push_back(entry.item);
    }
    cache_ = std::move(fresh);
    resource_version_ = list_rv;
    ++stats_.lists;
    if (after_gone) ++stats_.relists_gone;
  }
  for (const auto& h : handlers_) {
    for (const auto& o : added) {
      if (h.on_add) h.on_add(o);
    }
    for (const auto& [o, n] : updated) {
      if (h.on_update) h.on_update(o, n);
    }
    for (const auto& o : deleted) {
      if (h.on_delete) h.on_delete(o);
    }
  }
  {
    MutexLock lock(mu_);
    synced_ = true;
  }
  cv_.NotifyAll();
  return OkStatus();
}

Status InformerCore::WatchOnce() {
  WatchOptions watch;
  watch.label_selector = options_.label_selector;
  watch.field_selector = options_.field_selector;
  watch.resource_version = resource_version();
  watch.bookmarks = true;
  watch.timeout_seconds = options_.watch_timeout_seconds;
  {
    MutexLock lock(mu_);
    ++stats_.watches;
  }
  return client_->Watch(
      ref_, options_.ns, watch,
      [this](WatchEvent& event) {
        Apply(event.type, std::move(event.object));
        return !stop_.load();
      },
      &stop_);
}

void InformerCore::Apply(const std::string& type, json object) {
  const std::string rv = ResourceVersionOf(object);
  if (type == "BOOKMARK") {
    MutexLock lock(mu_);
    if (!rv.empty()) resource_version_ = rv;
    ++stats_.bookmarks;
    return;
  }
  const std::string key = KeyOf(object);
  {
    MutexLock lock(mu_);
    if (!rv.empty()) resource_version_ = rv;
    const auto it = cache_.find(key);
    if (it != cache_.end() &&
        CompareResourceVersions(rv, it->second.resource_version).value_or(1) <= 0) {
      ++stats_.stale_dropped;
      return;
    }
  }
  // Decoding happens outside the lock; only this thread writes the cache.
  Item current = DecodeOrCount(std::move(object), key);
  Item old;
  {
    MutexLock lock(mu_);
    const auto it = cache_.find(key);
    if (it != cache_.end()) old = it->second.item;
    if (type == "DELETED") {
      if (!old) {
        ++stats_.stale_dropped;  // never seen, or already gone in a relist
        return;
      }
      cache_.erase(key);
      if (!current) current = old;  // the last state known
    } else if (!current) {
      // Undecodable: the cached state is no longer the server's; leave the object out.
      if (old) cache_.erase(key);
    } else {
      cache_[key] = Entry{rv, current};
    }
  }
  for (const auto& h : handlers_) {
    if (type == "DELETED" || !current) {
      if (h.on_delete && old) h.on_delete(type == "DELETED" ? current : old);
    } else if (old) {
      if (h.on_update) h.on_update(old, current);
    } else if (h.on_add) {
      h.on_add(current);
    }
  }
}

}  // namespace xpu::api::client
