#include "controller/pending_cache.h"

#include <memory>
#include <utility>

namespace xpu::controller {

void PendingCache::Note(const std::string& node, const std::string& version,
                        const api::NodeInventory& inventory) {
  MutexLock lock(mu_);
  auto it = nodes_.find(node);
  if (it != nodes_.end() && it->second.version == version) return;
  ++noted_;
  Put(node, Entry{.version = version, .facts = models_.Of(inventory)});
}

void PendingCache::Forget(const std::string& node) {
  MutexLock lock(mu_);
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  nodes_.erase(it);
  models_.Prune();
}

void PendingCache::Put(const std::string& node, Entry entry) {
  auto [it, fresh] = nodes_.try_emplace(node);
  const bool same_model = !fresh && it->second.facts.model == entry.facts.model;
  it->second = std::move(entry);
  if (!fresh && !same_model) models_.Prune();
}

std::vector<PendingNode> PendingCache::Facts(const std::vector<std::string>& nodes) const {
  std::vector<PendingNode> out;
  out.reserve(nodes.size());
  MutexLock lock(mu_);
  for (const std::string& n : nodes) {
    auto it = nodes_.find(n);
    out.push_back(it != nodes_.end() ? it->second.facts : PendingNode{});
  }
  return out;
}

PendingCache::Counts PendingCache::counts() const {
  MutexLock lock(mu_);
  return {.nodes = nodes_.size(), .models = models_.size(), .noted = noted_};
}

}  // namespace xpu::controller
